package metastate

// maxNameBytes bounds database, table and column names.
const maxNameBytes = 200

// validName reports whether s is 1 to 200 ASCII letters, digits or
// underscores: the rule for database, table and column names.
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// nameRule ends the message of an invalid name.
const nameRule = "use 1 to 200 ASCII letters, digits or underscores"
