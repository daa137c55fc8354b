package main

// argKind is what a command's first positional argument names. A client
// command checks it before connecting (an invalid name is a usage
// mistake, whatever the command) and completes it from the server.
type argKind int

const (
	argNone        argKind = iota
	argDatabase            // an existing database: DB
	argTable               // an existing table: DB.TABLE
	argNewDatabase         // a database to create: checked, not completed
	argNewTable            // a table to create: checked, not completed
)

// check refuses an invalid name in pos[0] as a usage mistake.
func (k argKind) check(pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	switch k {
	case argDatabase, argNewDatabase:
		return databaseName(pos[0])
	case argTable, argNewTable:
		_, _, err := tableName(pos[0])
		return err
	}
	return nil
}
