package record

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseSchema parses the CLI schema syntax: a comma-separated list of column
// definitions, optionally with one table-level primary key clause.
//
//	schema  = element { "," element }
//	element = column | "PRIMARY" "KEY" "(" name { "," name } ")"
//	column  = name type { "NOT" "NULL" | "NULL" | "PRIMARY" "KEY" }
//	type    = typename [ "(" integer [ "," integer ] ")" ]
//	        | "ARRAY" "<" type [ null ] ">"
//	        | "MAP" "<" type [ "NOT" "NULL" ] "," type [ null ] ">"
//	        | "ROW" "<" name type [ null ] { "," name type [ null ] } ">"
//	null    = "NOT" "NULL" | "NULL"
//
// For example "id BIGINT NOT NULL PRIMARY KEY, name STRING, amount
// DECIMAL(10,2)". Keywords and type names are case-insensitive; column names
// are kept as written and are case-sensitive, and two of them may not
// differ in case alone. A column is nullable unless it says NOT NULL. A
// primary key is declared either on one column or by the clause, whose
// order is the key order; its columns must say NOT NULL.
//
// Type names (aliases after the slash) and defaults:
//
//	BOOLEAN / BOOL
//	TINYINT, SMALLINT, INT / INTEGER, BIGINT
//	FLOAT, DOUBLE
//	DECIMAL / NUMERIC / DEC, DECIMAL(p), DECIMAL(p,s)   default DECIMAL(10,0)
//	STRING / TEXT / VARCHAR
//	BYTES / BYTEA / VARBINARY
//	DATE
//	TIME                                                milliseconds
//	TIMESTAMP, TIMESTAMP(p)                             default precision 6
//	TIMESTAMP_LTZ, TIMESTAMP_LTZ(p)                     default precision 6
//	ARRAY<T>, MAP<K, V>, ROW<name T, ...>               nested, see below
//
// The nested types nest to MaxNestingDepth levels, with at most MaxColumns
// columns and nested fields in all. An array element, a map value and a
// row field are nullable unless they say NOT NULL, as columns are; map keys
// are never null and of a type that is not nested. Field names follow the
// column name rule and are distinct within their ROW. For example "tags
// ARRAY<STRING NOT NULL>, attrs MAP<STRING, BIGINT>, address ROW<street
// STRING, zip INT NOT NULL>".
//
// Lengths are refused (VARCHAR(n), CHAR(n), VARBINARY(n), BINARY(n)):
// Floe does not enforce them, and accepting one would silently widen the
// column. An unknown type's error lists SupportedTypes.
//
// The text is at most MaxSchemaTextBytes long. The result is validated as
// by Schema.Validate. Errors match
// ErrInvalidSchema and name the column by position and name, as in
// `record: schema: column 2 "amount": unknown type "DECIMALS"`.
func ParseSchema(src string) (Schema, error) {
	s, err := ParseStoredSchema(src)
	if err != nil {
		return Schema{}, err
	}
	if err := namesDifferInCase(s.Columns); err != nil {
		return Schema{}, err
	}
	return s, nil
}

// ParseStoredSchema is ParseSchema for a schema already stored: it takes
// column names that differ only in case, which a table created before they
// were refused may have, so such a table still opens.
func ParseStoredSchema(src string) (Schema, error) {
	if err := checkSchemaTextSize(src); err != nil {
		return Schema{}, err
	}
	p := schemaParser{src: src}
	p.advance()
	if p.tok.kind == tokEOF {
		return Schema{}, newSchemaError("no columns")
	}
	var s Schema
	pkDeclared := false
	var where string // names the element just parsed, for errors after it
	for {
		if p.tok.kind != tokWord {
			return Schema{}, p.syntaxError("column "+strconv.Itoa(len(s.Columns)+1), "a column name")
		}
		first := p.tok.text
		p.advance()
		if strings.EqualFold(first, "PRIMARY") && p.isKeyword("KEY") {
			p.advance()
			if pkDeclared {
				return Schema{}, newSchemaError("more than one primary key")
			}
			pkDeclared = true
			key, err := p.parseKeyList()
			if err != nil {
				return Schema{}, err
			}
			s.PrimaryKey = key
			where = "primary key"
		} else {
			col, isKey, err := p.parseColumn(len(s.Columns), first)
			if err != nil {
				return Schema{}, err
			}
			if isKey {
				if pkDeclared {
					return Schema{}, newSchemaError(columnRef(len(s.Columns), first) + ": more than one primary key")
				}
				pkDeclared = true
				s.PrimaryKey = []string{first}
			}
			s.Columns = append(s.Columns, col)
			where = columnRef(len(s.Columns)-1, first)
		}
		if p.tok.kind == tokEOF {
			break
		}
		if p.tok.kind != tokComma {
			return Schema{}, p.syntaxError(where, `"," or the end`)
		}
		p.advance()
	}
	if err := s.Validate(); err != nil {
		return Schema{}, err
	}
	return s, nil
}

// namesDifferInCase refuses two columns whose names differ only in case
// ("id" and "ID"): SQL, table formats such as Iceberg and Go's
// encoding/json (decoding into structs) match names without case, and
// would take one column's value for the other's.
// Validate does not refuse them, so that a stored schema which has them
// still decodes.
func namesDifferInCase(columns []Column) error {
	seen := make(map[string]int, len(columns))
	for i, c := range columns {
		folded := strings.ToLower(c.Name)
		if first, dup := seen[folded]; dup {
			return newSchemaError(columnRef(i, c.Name) + ": same name as column " + strconv.Itoa(first+1) + " " +
				strconv.Quote(columns[first].Name) + " but for case; names must differ in more than case")
		}
		seen[folded] = i
	}
	return nil
}

// MaxSchemaTextBytes bounds the text that ParseSchema and ParseType read.
const MaxSchemaTextBytes = 4 << 20

func checkSchemaTextSize(src string) error {
	if len(src) > MaxSchemaTextBytes {
		return newSchemaError("text of " + strconv.Itoa(len(src)) + " bytes exceeds the limit of " +
			strconv.Itoa(MaxSchemaTextBytes) + " (MaxSchemaTextBytes)")
	}
	return nil
}

// ParseType parses one type in the syntax of ParseSchema, such as
// "DECIMAL(10,2)", "timestamp" or "ARRAY<ROW<a INT, b STRING NOT NULL>>".
// ParseType(t.String()) equals t for every valid t. Errors match
// ErrInvalidSchema.
func ParseType(src string) (DataType, error) {
	if err := checkSchemaTextSize(src); err != nil {
		return DataType{}, err
	}
	p := schemaParser{src: src}
	p.advance()
	t, err := p.parseType("", 1)
	if err != nil {
		return DataType{}, err
	}
	if p.tok.kind != tokEOF {
		return DataType{}, p.syntaxError("type", "the end")
	}
	return t, nil
}

// parseColumn parses what follows the name of the column at index i.
func (p *schemaParser) parseColumn(i int, name string) (col Column, isKey bool, err error) {
	ref := columnRef(i, name)
	t, err := p.parseType(ref+": ", 1)
	if err != nil {
		return Column{}, false, err
	}
	col = Column{Name: name, Type: t, Nullable: true}
	nullSaid := false
	for p.tok.kind == tokWord {
		switch {
		case p.isKeyword("NOT"), p.isKeyword("NULL"):
			notNull := p.isKeyword("NOT")
			if notNull {
				p.advance()
				if !p.isKeyword("NULL") {
					return Column{}, false, p.syntaxError(ref, "NULL after NOT")
				}
			}
			if nullSaid {
				return Column{}, false, newSchemaError(ref + ": NULL or NOT NULL said twice")
			}
			nullSaid = true
			col.Nullable = !notNull
			p.advance()
		case p.isKeyword("PRIMARY"):
			p.advance()
			if !p.isKeyword("KEY") {
				return Column{}, false, p.syntaxError(ref, "KEY after PRIMARY")
			}
			if isKey {
				return Column{}, false, newSchemaError(ref + ": PRIMARY KEY said twice")
			}
			isKey = true
			p.advance()
		default:
			return Column{}, false, p.syntaxError(ref, `NOT NULL, NULL, PRIMARY KEY, "," or the end`)
		}
	}
	return col, isKey, nil
}

// parseKeyList parses "(" name { "," name } ")" of a primary key clause.
func (p *schemaParser) parseKeyList() ([]string, error) {
	if p.tok.kind != tokLParen {
		return nil, p.syntaxError("primary key", `"("`)
	}
	p.advance()
	var key []string
	for {
		if p.tok.kind != tokWord {
			return nil, p.syntaxError("primary key", "a column name")
		}
		key = append(key, p.tok.text)
		p.advance()
		switch p.tok.kind {
		case tokComma:
			p.advance()
		case tokRParen:
			p.advance()
			return key, nil
		default:
			return nil, p.syntaxError("primary key", `"," or ")"`)
		}
	}
}

// parseType parses a type name and its parameters. prefix starts every error
// message (a column reference and ": ", or nothing); depth is the nesting
// depth of the type, 1 for a column's. The type of depth 1 is validated
// whole.
func (p *schemaParser) parseType(prefix string, depth int) (DataType, error) {
	if p.tok.kind != tokWord {
		where := strings.TrimSuffix(prefix, ": ")
		if where == "" {
			where = "type"
		}
		return DataType{}, p.syntaxError(where, "a type")
	}
	name := p.tok.text
	if kind, ok := nestedKind(name); ok {
		t, err := p.parseNested(prefix, kind, depth)
		if err != nil {
			return DataType{}, err
		}
		if depth == 1 {
			if msg := t.problem(); msg != "" {
				return DataType{}, newSchemaError(prefix + msg)
			}
		}
		return t, nil
	}
	p.advance()
	var params []int
	if p.tok.kind == tokLParen {
		p.advance()
		for {
			n, err := strconv.Atoi(p.tok.text)
			if p.tok.kind != tokWord || err != nil || n < 0 || !isDigit(p.tok.text[0]) {
				return DataType{}, p.syntaxError(prefix+name, "a type parameter")
			}
			params = append(params, n)
			p.advance()
			if p.tok.kind == tokRParen {
				p.advance()
				break
			}
			if p.tok.kind != tokComma {
				return DataType{}, p.syntaxError(prefix+name, `"," or ")"`)
			}
			p.advance()
		}
	}
	t, msg := typeFromName(name, params)
	if msg == "" {
		msg = t.problem()
	}
	if msg != "" {
		return DataType{}, newSchemaError(prefix + msg)
	}
	return t, nil
}

// nestedKind returns the kind of a nested type name.
func nestedKind(name string) (Kind, bool) {
	switch strings.ToUpper(name) {
	case "ARRAY":
		return KindArray, true
	case "MAP":
		return KindMap, true
	case "ROW":
		return KindRow, true
	}
	return KindInvalid, false
}

// parseNested parses an ARRAY, MAP or ROW type from its name on.
func (p *schemaParser) parseNested(prefix string, kind Kind, depth int) (DataType, error) {
	where := prefix + kind.String()
	if depth > MaxNestingDepth {
		return DataType{}, newSchemaError(where + ": nesting deeper than " + strconv.Itoa(MaxNestingDepth) +
			" levels (MaxNestingDepth) at offset " + strconv.Itoa(p.tok.offset))
	}
	p.advance()
	if p.tok.kind != tokLAngle {
		return DataType{}, p.syntaxError(where, `"<"`)
	}
	p.advance()
	var children []Column
	for {
		var c Column
		switch {
		case kind == KindRow:
			if p.tok.kind != tokWord {
				return DataType{}, p.syntaxError(where, "a field name")
			}
			c.Name = p.tok.text
			p.advance()
		case kind == KindArray:
			c.Name = elemName
		case len(children) == 0:
			c.Name = keyName
		default:
			c.Name = valueName
		}
		if p.fields++; p.fields > MaxColumns {
			return DataType{}, newSchemaError(where + ": more than " + strconv.Itoa(MaxColumns) +
				" nested fields (MaxColumns) at offset " + strconv.Itoa(p.tok.offset))
		}
		childWhere := where + " " + c.Name // as DataType.problem names it
		if kind == KindRow {
			childWhere = where + " field " + c.Name
		}
		var err error
		if c.Type, err = p.parseType(childWhere+": ", depth+1); err != nil {
			return DataType{}, err
		}
		nullable, err := p.parseNullability(childWhere)
		if err != nil {
			return DataType{}, err
		}
		c.Nullable = nullable
		if c.Name == keyName && kind == KindMap {
			if nullable && p.nullSaid {
				return DataType{}, newSchemaError(where + ": keys are always NOT NULL")
			}
			c.Nullable = false
		}
		children = append(children, c)
		more := kind == KindRow || (kind == KindMap && len(children) == 1)
		if more && p.tok.kind == tokComma {
			p.advance()
			continue
		}
		if p.tok.kind == tokRAngle && (kind != KindMap || len(children) == 2) {
			p.advance()
			return DataType{kind: kind, children: children}, nil
		}
		switch {
		case kind == KindRow:
			return DataType{}, p.syntaxError(where, `NOT NULL, NULL, "," or ">"`)
		case more:
			return DataType{}, p.syntaxError(where, `NOT NULL or ","`)
		default:
			return DataType{}, p.syntaxError(where, `NOT NULL, NULL or ">"`)
		}
	}
}

// parseNullability parses the optional NOT NULL or NULL after a nested
// type's child, returning whether the child is nullable (the default) and
// setting p.nullSaid when either was written.
func (p *schemaParser) parseNullability(where string) (nullable bool, err error) {
	p.nullSaid = false
	switch {
	case p.isKeyword("NOT"):
		p.advance()
		if !p.isKeyword("NULL") {
			return false, p.syntaxError(where, "NULL after NOT")
		}
		p.advance()
		p.nullSaid = true
		return false, nil
	case p.isKeyword("NULL"):
		p.advance()
		p.nullSaid = true
	}
	return true, nil
}

// SupportedTypes lists the type names ParseSchema and ParseType accept,
// aliases in parentheses, for error messages and the docs.
const SupportedTypes = "BOOLEAN (BOOL), TINYINT, SMALLINT, INT (INTEGER), BIGINT, FLOAT, DOUBLE, " +
	"DECIMAL(p,s) (NUMERIC, DEC), STRING (TEXT, VARCHAR), BYTES (BYTEA, VARBINARY), DATE, TIME, " +
	"TIMESTAMP(p), TIMESTAMP_LTZ(p), ARRAY<T>, MAP<K, V>, ROW<name T, ...>"

// typeFromName builds the type for a type name and its parameters, or says
// what is wrong with them.
func typeFromName(name string, params []int) (DataType, string) {
	upper := strings.ToUpper(name)
	maxParams := 0
	var t DataType
	switch upper {
	case "BOOLEAN", "BOOL":
		t = Boolean()
	case "TINYINT":
		t = TinyInt()
	case "SMALLINT":
		t = SmallInt()
	case "INT", "INTEGER":
		t = Int()
	case "BIGINT":
		t = BigInt()
	case "FLOAT":
		t = Float()
	case "DOUBLE":
		t = Double()
	case "STRING", "TEXT":
		t = String()
	case "VARCHAR", "CHAR", "CHARACTER":
		if upper != "VARCHAR" || len(params) > 0 {
			return DataType{}, "type " + upper + "(n) is not supported: Floe does not enforce lengths; use STRING (or VARCHAR without a length)"
		}
		t = String()
	case "BYTES", "BYTEA":
		t = Bytes()
	case "VARBINARY", "BINARY":
		if upper != "VARBINARY" || len(params) > 0 {
			return DataType{}, "type " + upper + "(n) is not supported: Floe does not enforce lengths; use BYTES (or VARBINARY without a length)"
		}
		t = Bytes()
	case "DATE":
		t = Date()
	case "TIME":
		t = Time()
	case "DECIMAL", "NUMERIC", "DEC":
		maxParams = 2
		t = Decimal(DefaultDecimalPrecision, DefaultDecimalScale)
		if len(params) >= 1 {
			t = Decimal(params[0], 0)
		}
		if len(params) == 2 {
			t = Decimal(params[0], params[1])
		}
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		maxParams = 1
		precision := DefaultTimestampPrecision
		if len(params) == 1 {
			precision = params[0]
		}
		if upper == "TIMESTAMP" {
			t = Timestamp(precision)
		} else {
			t = TimestampLTZ(precision)
		}
	default:
		return DataType{}, "unknown type " + strconv.Quote(name) + "; supported types: " + SupportedTypes
	}
	if len(params) > maxParams {
		if maxParams == 0 {
			return DataType{}, "type " + upper + " takes no parameters"
		}
		return DataType{}, "type " + upper + " takes at most " + strconv.Itoa(maxParams) + " parameters"
	}
	return t, ""
}

type tokenKind uint8

const (
	tokEOF    tokenKind = iota
	tokWord             // a run of [A-Za-z0-9_]
	tokLParen           // (
	tokRParen           // )
	tokComma            // ,
	tokLAngle           // <
	tokRAngle           // >
	tokOther            // any other character
)

type token struct {
	kind   tokenKind
	text   string
	offset int // byte offset in the source
}

// schemaParser is a recursive-descent parser over a one-token lookahead.
type schemaParser struct {
	src      string
	pos      int   // offset of the next unread byte
	tok      token // current token
	fields   int   // nested fields parsed so far, at most MaxColumns
	nullSaid bool  // the last parseNullability read NOT NULL or NULL
}

// advance moves to the next token.
func (p *schemaParser) advance() {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
	start := p.pos
	if p.pos == len(p.src) {
		p.tok = token{kind: tokEOF, offset: start}
		return
	}
	kind := tokOther
	switch c := p.src[p.pos]; {
	case c == '(':
		kind = tokLParen
	case c == ')':
		kind = tokRParen
	case c == ',':
		kind = tokComma
	case c == '<':
		kind = tokLAngle
	case c == '>':
		kind = tokRAngle
	case isNameByte(c):
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		p.tok = token{kind: tokWord, text: p.src[start:p.pos], offset: start}
		return
	}
	_, size := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += size
	p.tok = token{kind: kind, text: p.src[start:p.pos], offset: start}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *schemaParser) isKeyword(kw string) bool {
	return p.tok.kind == tokWord && strings.EqualFold(p.tok.text, kw)
}

// syntaxError reports that the current token is not what was expected.
func (p *schemaParser) syntaxError(where, expected string) error {
	found := "the end"
	if p.tok.kind != tokEOF {
		found = strconv.Quote(p.tok.text)
	}
	return newSchemaError(where + ": expected " + expected + ", found " + found + " at offset " + strconv.Itoa(p.tok.offset))
}
