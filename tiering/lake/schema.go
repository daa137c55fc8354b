package lake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/floedb/floe/storage/record"
)

// Schema is an Iceberg schema as table metadata holds it: a struct whose
// fields, and every field nested in them, carry ids unique in the table.
type Schema struct {
	ID     int     `json:"schema-id"`
	Fields []Field `json:"fields"`
	// IdentifierFieldIDs are the primary key's column ids (a primary-key
	// table): what engines take for the row identity.
	IdentifierFieldIDs []int `json:"identifier-field-ids,omitempty"`
}

// MarshalJSON writes the schema with its "type": "struct".
func (s Schema) MarshalJSON() ([]byte, error) {
	type plain Schema
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"struct", plain(s)})
}

// Field is a named field of a struct (a column, or a ROW's field).
type Field struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     Type   `json:"type"`
	Doc      string `json:"doc,omitempty"`
}

// Type is an Iceberg type: a primitive ("long", "decimal(10,2)") or a
// list, map or struct with the ids of its element, key, value or fields.
type Type struct {
	Primitive string // empty for a nested type
	// List: Element; map: Key and Value; struct: Fields.
	Element, Key, Value *Field
	Fields              []Field
	Struct              bool
}

// MarshalJSON writes a primitive as its name and a nested type as the
// object the spec gives it.
func (t Type) MarshalJSON() ([]byte, error) {
	switch {
	case t.Primitive != "":
		return json.Marshal(t.Primitive)
	case t.Element != nil:
		return json.Marshal(struct {
			Type            string `json:"type"`
			ElementID       int    `json:"element-id"`
			Element         Type   `json:"element"`
			ElementRequired bool   `json:"element-required"`
		}{"list", t.Element.ID, t.Element.Type, t.Element.Required})
	case t.Key != nil && t.Value != nil:
		return json.Marshal(struct {
			Type          string `json:"type"`
			KeyID         int    `json:"key-id"`
			Key           Type   `json:"key"`
			ValueID       int    `json:"value-id"`
			Value         Type   `json:"value"`
			ValueRequired bool   `json:"value-required"`
		}{"map", t.Key.ID, t.Key.Type, t.Value.ID, t.Value.Type, t.Value.Required})
	case t.Struct:
		return json.Marshal(struct {
			Type   string  `json:"type"`
			Fields []Field `json:"fields"`
		}{"struct", t.Fields})
	}
	return nil, fmt.Errorf("%w: an empty type", ErrInvalidMetadata)
}

// UnmarshalJSON reads what MarshalJSON writes (and what other writers of
// Iceberg metadata write for these types).
func (t *Type) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*t = Type{Primitive: name}
		return nil
	}
	var n struct {
		Type            string          `json:"type"`
		ElementID       int             `json:"element-id"`
		Element         json.RawMessage `json:"element"`
		ElementRequired bool            `json:"element-required"`
		KeyID           int             `json:"key-id"`
		Key             json.RawMessage `json:"key"`
		ValueID         int             `json:"value-id"`
		Value           json.RawMessage `json:"value"`
		ValueRequired   bool            `json:"value-required"`
		Fields          []Field         `json:"fields"`
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%w: type %s: %v", ErrInvalidMetadata, b, err)
	}
	sub := func(id int, raw json.RawMessage, required bool, name string) (*Field, error) {
		f := &Field{ID: id, Name: name, Required: required}
		if err := json.Unmarshal(raw, &f.Type); err != nil {
			return nil, err
		}
		return f, nil
	}
	var err error
	switch n.Type {
	case "list":
		*t = Type{}
		t.Element, err = sub(n.ElementID, n.Element, n.ElementRequired, "element")
	case "map":
		*t = Type{}
		if t.Key, err = sub(n.KeyID, n.Key, true, "key"); err == nil {
			t.Value, err = sub(n.ValueID, n.Value, n.ValueRequired, "value")
		}
	case "struct":
		*t = Type{Struct: true, Fields: n.Fields}
	default:
		err = fmt.Errorf("%w: unknown type %q", ErrInvalidMetadata, n.Type)
	}
	return err
}

// The system columns every lake table ends with: which bucket and offset
// a row came from and its record's timestamp. A union read continues the
// log after the lake's offsets by them, and an engine can tell a row's
// place in the stream. Apache Fluss's lake tables carry the same three.
const (
	BucketColumn    = "__bucket"
	OffsetColumn    = "__offset"
	TimestampColumn = "__timestamp"
)

// NewSchema is the Iceberg schema of a table's columns, then the system
// columns. Fields keep the ids prev (the lake table's current schema; nil
// for a new table) gives the same path of names, so ALTER TABLE's added
// columns become Iceberg schema evolution; new fields take ids after
// *lastID, which NewSchema advances.
func NewSchema(id int, s record.Schema, prev *Schema, lastID *int) (Schema, error) {
	known := map[string]int{}
	if prev != nil {
		collectIDs(prev.Fields, "", known)
	}
	a := idAssigner{known: known, last: lastID}
	out := Schema{ID: id}
	for _, c := range s.Columns {
		if isSystemName(c.Name) {
			return Schema{}, fmt.Errorf("%w: column %s: names starting with __ are the lake's system columns", ErrUnsupported, c.Name)
		}
		f, err := a.field(c.Name, c.Type, !c.Nullable, "")
		if err != nil {
			return Schema{}, fmt.Errorf("column %s: %w", c.Name, err)
		}
		out.Fields = append(out.Fields, f)
	}
	for _, sys := range []struct{ name, typ, doc string }{
		{BucketColumn, "int", "the Floe bucket the row was written to"},
		{OffsetColumn, "long", "the row's offset in its bucket's log (of its latest change, in a primary-key table)"},
		{TimestampColumn, "timestamptz", "the row's record timestamp"},
	} {
		out.Fields = append(out.Fields, Field{ID: a.id(sys.name), Name: sys.name, Required: true, Type: Type{Primitive: sys.typ}, Doc: sys.doc})
	}
	for _, k := range s.PrimaryKey {
		for _, f := range out.Fields {
			if f.Name == k {
				out.IdentifierFieldIDs = append(out.IdentifierFieldIDs, f.ID)
			}
		}
	}
	return out, nil
}

func isSystemName(name string) bool { return strings.HasPrefix(name, "__") }

// collectIDs maps each field's path of names ("a", "a.b", "a.element") to
// its id.
func collectIDs(fields []Field, prefix string, into map[string]int) {
	for _, f := range fields {
		path := prefix + f.Name
		into[path] = f.ID
		collectTypeIDs(f.Type, path, into)
	}
}

func collectTypeIDs(t Type, path string, into map[string]int) {
	for _, sub := range []*Field{t.Element, t.Key, t.Value} {
		if sub != nil {
			into[path+"."+sub.Name] = sub.ID
			collectTypeIDs(sub.Type, path+"."+sub.Name, into)
		}
	}
	if t.Struct {
		collectIDs(t.Fields, path+".", into)
	}
}

// idAssigner gives each path its known id, or the next one.
type idAssigner struct {
	known map[string]int
	last  *int
}

func (a idAssigner) id(path string) int {
	if id, ok := a.known[path]; ok {
		return id
	}
	*a.last++
	a.known[path] = *a.last
	return *a.last
}

func (a idAssigner) field(name string, t record.DataType, required bool, prefix string) (Field, error) {
	path := prefix + name
	f := Field{ID: a.id(path), Name: name, Required: required}
	var err error
	f.Type, err = a.typeOf(t, path)
	return f, err
}

// typeOf is the Iceberg type of a column type (docs/lake.md has the
// table): TINYINT and SMALLINT widen to int, TIME and TIMESTAMP are
// microseconds (a TIMESTAMP above precision 6 loses its nanoseconds).
func (a idAssigner) typeOf(t record.DataType, path string) (Type, error) {
	prim := func(name string) (Type, error) { return Type{Primitive: name}, nil }
	switch t.Kind() {
	case record.KindBoolean:
		return prim("boolean")
	case record.KindTinyInt, record.KindSmallInt, record.KindInt:
		return prim("int")
	case record.KindBigInt:
		return prim("long")
	case record.KindFloat:
		return prim("float")
	case record.KindDouble:
		return prim("double")
	case record.KindDecimal:
		return prim(fmt.Sprintf("decimal(%d, %d)", t.Precision(), t.Scale()))
	case record.KindString:
		return prim("string")
	case record.KindBytes:
		return prim("binary")
	case record.KindDate:
		return prim("date")
	case record.KindTime:
		return prim("time")
	case record.KindTimestamp:
		return prim("timestamp")
	case record.KindTimestampLTZ:
		return prim("timestamptz")
	case record.KindArray:
		e := t.Elem()
		f, err := a.field("element", e.Type, !e.Nullable, path+".")
		return Type{Element: &f}, err
	case record.KindMap:
		k, v := t.MapKey(), t.MapValue()
		kf, err := a.field("key", k.Type, true, path+".")
		if err != nil {
			return Type{}, err
		}
		vf, err := a.field("value", v.Type, !v.Nullable, path+".")
		return Type{Key: &kf, Value: &vf}, err
	case record.KindRow:
		out := Type{Struct: true}
		for _, c := range t.Fields() {
			f, err := a.field(c.Name, c.Type, !c.Nullable, path+".")
			if err != nil {
				return Type{}, err
			}
			out.Fields = append(out.Fields, f)
		}
		return out, nil
	}
	return Type{}, fmt.Errorf("%w: type %v", ErrUnsupported, t)
}
