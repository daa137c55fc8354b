package tableprop

// parseDataLake reads one of the datalake.* properties into v. The
// enumerated values arrive lower-cased.
func parseDataLake(v *Values, k, val string) error {
	bad := func(problem string) error { return &Error{Property: k, Value: val, Problem: problem} }
	switch k {
	case DataLakeEnabled:
		v.DataLake = val == "true"
	case DataLakeFormat:
		v.DataLakeFormat = val
	case DataLakeFreshness:
		d, ok := parseDuration(val)
		if !ok {
			return bad("want a duration of at least 1s (10s, 3m, 1h)")
		}
		v.DataLakeFreshness = d
	case DataLakeRetention:
		d, ok := parseDurationOrForever(val)
		if !ok {
			return bad("want a duration of at least 1s (1h, 7d) or forever")
		}
		v.DataLakeRetention = d
	}
	return nil
}
