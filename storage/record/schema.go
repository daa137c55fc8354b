package record

import (
	"slices"
	"strconv"
	"strings"
)

// Limits of a schema.
const (
	// MaxColumns is the largest number of columns of a schema.
	MaxColumns = 4096
	// MaxColumnNameBytes is the longest column name.
	MaxColumnNameBytes = 200
)

// Column is one column of a schema.
type Column struct {
	// Name is 1 to 200 characters of [A-Za-z0-9_]. Names are case-sensitive.
	Name string `json:"name"`
	// Type is the SQL type of the values.
	Type DataType `json:"type"`
	// Nullable says whether the column accepts nulls. The zero value is
	// NOT NULL; in the CLI syntax a column is nullable unless it says NOT NULL.
	Nullable bool `json:"nullable"`
}

// Equal reports whether c and o have the same name, nullability and type,
// comparing nested types deeply.
func (c Column) Equal(o Column) bool {
	return c.Name == o.Name && c.Nullable == o.Nullable && c.Type.Equal(o.Type)
}

// Schema is the ordered list of columns of a table and its primary key.
//
// A Schema is a plain value; the functions that take one read it and keep no
// reference to it, except NewRowView, whose result reads the columns while it
// is used. Callers must not change a Schema that such a view reads.
type Schema struct {
	// Columns lists the columns in row order: at least one, at most
	// MaxColumns, with distinct names.
	Columns []Column `json:"columns"`
	// PrimaryKey names the primary-key columns in key order; empty for a log
	// table. Primary-key columns must be NOT NULL.
	PrimaryKey []string `json:"primary_key,omitempty"`
}

// Validate checks names, types, nullability and the primary key, and returns
// an error matching ErrInvalidSchema that names the first offending column.
func (s Schema) Validate() error {
	if len(s.Columns) == 0 {
		return newSchemaError("no columns")
	}
	if len(s.Columns) > MaxColumns {
		return newSchemaError(strconv.Itoa(len(s.Columns)) + " columns, more than " + strconv.Itoa(MaxColumns))
	}
	seen := make(map[string]int, len(s.Columns))
	fields := len(s.Columns) // columns and the columns nested in them
	for i, c := range s.Columns {
		if !ValidName(c.Name) {
			return newSchemaError(columnRef(i, c.Name) + ": invalid name (want 1 to 200 characters of A-Z, a-z, 0-9, _)")
		}
		if first, dup := seen[c.Name]; dup {
			return newSchemaError(columnRef(i, c.Name) + ": duplicate name (also column " + strconv.Itoa(first+1) + ")")
		}
		seen[c.Name] = i
		if c.Type.IsNested() {
			if msg := c.Type.problemAt(1, &fields); msg != "" {
				return newSchemaError(columnRef(i, c.Name) + ": " + msg)
			}
			continue
		}
		if msg := c.Type.problem(); msg != "" {
			return newSchemaError(columnRef(i, c.Name) + ": " + msg)
		}
	}
	for k, name := range s.PrimaryKey {
		i, ok := seen[name]
		if !ok {
			return newSchemaError("primary key: unknown column " + strconv.Quote(name))
		}
		if slices.Index(s.PrimaryKey, name) != k {
			return newSchemaError("primary key: duplicate column " + strconv.Quote(name))
		}
		if s.Columns[i].Nullable {
			return newSchemaError(columnRef(i, name) + ": primary key column must be NOT NULL")
		}
		if t := s.Columns[i].Type; t.IsNested() {
			return newSchemaError(columnRef(i, name) + ": " + t.String() + " cannot be part of the primary key")
		}
	}
	return nil
}

// columnRef names column i (0-based) for messages: `column 2 "amount"`.
func columnRef(i int, name string) string {
	return "column " + strconv.Itoa(i+1) + " " + strconv.Quote(name)
}

// NameRule says what ValidName takes, to end the message of a name it
// refuses.
const NameRule = "use 1 to 200 ASCII letters, digits or underscores"

// ValidName reports whether name is 1 to 200 ASCII letters, digits or
// underscores: the rule for column, table and database names.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxColumnNameBytes {
		return false
	}
	for i := range len(name) {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c == '_' || isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// ColumnIndex returns the position of the column with the given name.
// Names are compared exactly.
func (s Schema) ColumnIndex(name string) (int, bool) {
	for i, c := range s.Columns {
		if c.Name == name {
			return i, true
		}
	}
	return -1, false
}

// Equal reports whether s and o have the same columns and primary key.
func (s Schema) Equal(o Schema) bool {
	return slices.EqualFunc(s.Columns, o.Columns, Column.Equal) && slices.Equal(s.PrimaryKey, o.PrimaryKey)
}

// String returns the schema in the CLI syntax that ParseSchema reads, such as
// "id BIGINT NOT NULL PRIMARY KEY, name STRING, amount DECIMAL(10,2)".
// A single-column primary key is written on its column; a composite one as a
// trailing "PRIMARY KEY (a, b)" clause.
func (s Schema) String() string {
	var b strings.Builder
	pkOnColumn := -1
	if len(s.PrimaryKey) == 1 {
		pkOnColumn, _ = s.ColumnIndex(s.PrimaryKey[0])
	}
	for i, c := range s.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Type.String())
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
		if i == pkOnColumn {
			b.WriteString(" PRIMARY KEY")
		}
	}
	if len(s.PrimaryKey) > 0 && pkOnColumn < 0 {
		if len(s.Columns) > 0 {
			b.WriteString(", ")
		}
		b.WriteString("PRIMARY KEY (")
		b.WriteString(strings.Join(s.PrimaryKey, ", "))
		b.WriteByte(')')
	}
	return b.String()
}
