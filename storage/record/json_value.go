package record

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// setField sets column i from raw, one JSON value without surrounding space.
func (c *JSONCodec) setField(i int, raw []byte) error {
	return c.setValue(c.enc, i, &c.schema.Columns[i], raw)
}

// setValue sets value i of enc, of column col, from raw, one JSON value
// without surrounding space.
func (c *JSONCodec) setValue(enc *RowEncoder, i int, col *Column, raw []byte) error {
	if string(raw) == "null" {
		if !col.Nullable {
			return newColumnError(col.Name, "null for NOT NULL column", ErrNullNotAllowed)
		}
		enc.SetNull(i)
		return enc.err
	}
	var err error
	switch col.Type.kind {
	case KindBoolean:
		err = c.setBool(enc, i, col, raw)
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt:
		err = c.setInteger(enc, i, col, raw)
	case KindFloat, KindDouble:
		err = c.setFloat(enc, i, col, raw)
	case KindDecimal:
		err = c.setDecimal(enc, i, col, raw)
	case KindString:
		var text []byte
		if text, err = c.stringValue(col, raw); err == nil {
			enc.SetStringBytes(i, text)
		}
	case KindBytes:
		err = c.setBytes(enc, i, col, raw)
	case KindDate, KindTime, KindTimestamp, KindTimestampLTZ:
		err = c.setTemporal(enc, i, col, raw)
	case KindArray, KindMap, KindRow:
		var payload []byte
		if payload, err = c.nestedValue(col, raw); err == nil {
			enc.setNestedChecked(i, payload)
		}
	default:
		err = newColumnError(col.Name, "unsupported type "+col.Type.String(), ErrWrongType)
	}
	if err != nil {
		return err
	}
	return enc.err
}

func (c *JSONCodec) setBool(enc *RowEncoder, i int, col *Column, raw []byte) error {
	switch string(raw) {
	case "true":
		enc.SetBool(i, true)
	case "false":
		enc.SetBool(i, false)
	default:
		return wrongJSONType(col, raw, "boolean")
	}
	return nil
}

func (c *JSONCodec) setInteger(enc *RowEncoder, i int, col *Column, raw []byte) error {
	if !isJSONNumber(raw) {
		return wrongJSONType(col, raw, "number")
	}
	v, err := jsonInteger(col, raw)
	if err != nil {
		return err
	}
	enc.SetInt64(i, v) // checks the range of narrow types
	return nil
}

// jsonInteger returns the value of a JSON number that must be an integer
// within the int64 range.
func jsonInteger(col *Column, raw []byte) (int64, error) {
	lit, ok := parseDecimalLiteral(raw, false)
	if !ok {
		return 0, newColumnError(col.Name, "value "+valueText(raw)+" is not a number", ErrInvalidValue)
	}
	mag, res := lit.scaled(0, 19)
	v, fits := int64OfMagnitude(lit.neg, mag)
	switch {
	case res == scaleFraction:
		return 0, newColumnError(col.Name, "value "+valueText(raw)+" is not an integer", ErrWrongType)
	case res == scaleTooLarge || !fits:
		return 0, newColumnError(col.Name, "value "+valueText(raw)+" out of range for "+col.Type.String(), ErrOverflow)
	}
	return v, nil
}

func (c *JSONCodec) setFloat(enc *RowEncoder, i int, col *Column, raw []byte) error {
	var f float64
	switch {
	case isJSONNumber(raw):
		bitSize := 64
		if col.Type.kind == KindFloat {
			bitSize = 32
		}
		var err error
		f, err = strconv.ParseFloat(string(raw), bitSize)
		if math.IsInf(f, 0) {
			return newColumnError(col.Name, "value "+valueText(raw)+" out of range for "+col.Type.String(), ErrOverflow)
		}
		if err != nil && !isRangeError(err) { // an underflow to zero is fine
			return newColumnError(col.Name, "value "+valueText(raw)+" is not a number", ErrInvalidValue)
		}
	case raw[0] == '"':
		switch string(raw) {
		case `"NaN"`:
			f = math.NaN()
		case `"Infinity"`:
			f = math.Inf(1)
		case `"-Infinity"`:
			f = math.Inf(-1)
		default:
			return newColumnError(col.Name, "string "+valueText(raw)+" is not a "+col.Type.String()+
				` (want a number, "NaN", "Infinity" or "-Infinity")`, ErrInvalidValue)
		}
	default:
		return wrongJSONType(col, raw, "number")
	}
	if col.Type.kind == KindFloat {
		enc.SetFloat32(i, float32(f))
	} else {
		enc.SetFloat64(i, f)
	}
	return nil
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (c *JSONCodec) setDecimal(enc *RowEncoder, i int, col *Column, raw []byte) error {
	text := raw
	isString := raw[0] == '"'
	if isString {
		var err error
		if text, err = c.stringValue(col, raw); err != nil {
			return err
		}
	} else if !isJSONNumber(raw) {
		return wrongJSONType(col, raw, "number or string")
	}
	lit, ok := parseDecimalLiteral(text, isString)
	if !ok {
		return newColumnError(col.Name, "value "+valueText(raw)+" is not a decimal number", ErrInvalidValue)
	}
	mag, res := lit.scaled(col.Type.scale, col.Type.precision)
	if res != scaleOK {
		return newColumnError(col.Name, "value "+valueText(raw)+" exceeds "+col.Type.String(), ErrOverflow)
	}
	enc.setDecimal(i, col, "", lit.neg, mag)
	return nil
}

func (c *JSONCodec) setBytes(enc *RowEncoder, i int, col *Column, raw []byte) error {
	text, err := c.stringValue(col, raw)
	if err != nil {
		return err
	}
	c.decoded, err = base64.StdEncoding.AppendDecode(c.decoded[:0], text)
	if err != nil {
		return newColumnError(col.Name, "invalid base64: "+err.Error(), ErrInvalidValue)
	}
	enc.SetBytes(i, c.decoded)
	return nil
}

// setTemporal sets a DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ column.
func (c *JSONCodec) setTemporal(enc *RowEncoder, i int, col *Column, raw []byte) error {
	t := col.Type
	if t.kind == KindTimestampLTZ && isJSONNumber(raw) {
		millis, err := jsonInteger(col, raw)
		if err != nil {
			return err
		}
		if msg := checkTimestamp(millis, 0, t.precision); msg != "" {
			return newColumnError(col.Name, "value "+valueText(raw)+" exceeds "+t.String(), ErrOverflow)
		}
		enc.SetTimestamp(i, millis, 0)
		return nil
	}
	if raw[0] != '"' {
		if t.kind == KindTimestampLTZ {
			return wrongJSONType(col, raw, "string or number")
		}
		return wrongJSONType(col, raw, "string")
	}
	text, err := c.stringValue(col, raw)
	if err != nil {
		return err
	}
	switch t.kind {
	case KindDate:
		days, ok := parseDate(text)
		if !ok {
			return invalidTemporal(col, raw, "YYYY-MM-DD")
		}
		enc.SetInt64(i, days)
	case KindTime:
		nanosOfDay, ok := parseTimeOfDay(text)
		if !ok {
			return invalidTemporal(col, raw, "HH:MM:SS[.fff]")
		}
		if nanosOfDay%nanosPerMilli != 0 {
			return newColumnError(col.Name, "value "+valueText(raw)+" exceeds TIME (milliseconds)", ErrOverflow)
		}
		enc.SetInt64(i, nanosOfDay/nanosPerMilli)
	default:
		ltz := t.kind == KindTimestampLTZ
		millis, nanos, ok := parseTimestamp(text, ltz)
		if !ok {
			if ltz {
				return invalidTemporal(col, raw, "RFC 3339 YYYY-MM-DDTHH:MM:SS[.fffffffff]Z or ±HH:MM")
			}
			if _, _, zoned := parseTimestamp(text, true); zoned {
				// The usual mistake: an instant given to a zoneless column.
				return newColumnError(col.Name, "value "+valueText(raw)+" has a time zone, and "+t.String()+
					" is a date-time without zone (want YYYY-MM-DDTHH:MM:SS[.fffffffff]); use TIMESTAMP_LTZ for instants", ErrInvalidValue)
			}
			return invalidTemporal(col, raw, "YYYY-MM-DDTHH:MM:SS[.fffffffff]")
		}
		if msg := checkTimestamp(millis, nanos, t.precision); msg != "" {
			return newColumnError(col.Name, "value "+valueText(raw)+" exceeds "+t.String(), ErrOverflow)
		}
		enc.SetTimestamp(i, millis, nanos)
	}
	return nil
}

func invalidTemporal(col *Column, raw []byte, want string) error {
	return newColumnError(col.Name, "value "+valueText(raw)+" is not a valid "+col.Type.kind.String()+" (want "+want+")", ErrInvalidValue)
}

func wrongJSONType(col *Column, raw []byte, want string) error {
	return newColumnError(col.Name, "expected JSON "+want+" for "+col.Type.String()+", got "+jsonTypeName(raw), ErrWrongType)
}

// jsonTypeName names the type of a syntactically valid JSON value.
func jsonTypeName(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

func isJSONNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || isDigit(raw[0]))
}

// valueText quotes a JSON value for an error message, shortened to about 64
// bytes and made valid UTF-8.
func valueText(raw []byte) string {
	const maxBytes = 64
	s := string(raw)
	if len(s) > maxBytes {
		cut := maxBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
}

// stringValue returns the contents of the JSON string raw, unescaped. The
// result aliases raw or c.text. Invalid UTF-8 and unpaired surrogate escapes
// are errors matching ErrInvalidUTF8.
func (c *JSONCodec) stringValue(col *Column, raw []byte) ([]byte, error) {
	if raw[0] != '"' || len(raw) < 2 {
		return nil, wrongJSONType(col, raw, "string")
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if !utf8.Valid(body) {
			return nil, newColumnError(col.Name, "string is not valid UTF-8", ErrInvalidUTF8)
		}
		return body, nil
	}
	var ok bool
	c.text, ok = appendUnescaped(c.text[:0], body)
	if !ok {
		return nil, newColumnError(col.Name, "string is not valid UTF-8 or has an unpaired surrogate escape", ErrInvalidUTF8)
	}
	return c.text, nil
}

// appendUnescaped appends the unescaped form of the body of a JSON string
// literal. It reports false for invalid UTF-8, unpaired surrogates and
// malformed escapes.
func appendUnescaped(dst, body []byte) ([]byte, bool) {
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return dst, false
			}
			switch esc := body[i+1]; esc {
			case '"', '\\', '/':
				dst = append(dst, esc)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(body[i+2:])
				if !ok {
					return dst, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || i+1 >= len(body) || body[i] != '\\' || body[i+1] != 'u' {
						return dst, false
					}
					low, ok := hex4(body[i+2:])
					if r = utf16.DecodeRune(r, low); !ok || r == utf8.RuneError {
						return dst, false
					}
					i += 6
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, false
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				return dst, false
			}
			dst = append(dst, body[i:i+size]...)
			i += size
		}
	}
	return dst, true
}

// hex4 parses the 4 hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case isDigit(c):
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONFloat appends f in the shortest form that reads back as the same
// float of bitSize bits: plain notation for magnitudes in [1e-6, 1e21) and
// exponent notation otherwise, as encoding/json writes. NaN and infinities,
// which JSON numbers cannot hold, become the strings "NaN", "Infinity" and
// "-Infinity".
func appendJSONFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, f, format, -1, bitSize)
}
