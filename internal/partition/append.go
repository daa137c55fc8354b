package partition

import (
	"bytes"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// BytesRow is a Row that also hands out a STRING column's bytes without
// copying them (record.RowView).
type BytesRow interface {
	Row
	StringBytes(i int) []byte
}

// AppendName appends the name of a row's partition to dst: what
// Name(RowValues(row)) gives, without allocating (a row type, not an
// interface holding one, so no row is boxed), for a writer routing every
// row. A null partition column or a bad string value is ErrInvalid.
func AppendName[R BytesRow](s Spec, dst []byte, v R) ([]byte, error) {
	return appendName(s, dst, v, true)
}

// AppendKnownName is AppendName without checking STRING values, for a
// caller that looks the name up among the names of existing partitions,
// all valid, and calls AppendName when it finds none: a writer's fast path.
func AppendKnownName[R BytesRow](s Spec, dst []byte, v R) ([]byte, error) {
	return appendName(s, dst, v, false)
}

func appendName[R BytesRow](s Spec, dst []byte, v R, check bool) ([]byte, error) {
	for i, k := range s.Keys {
		if i > 0 {
			dst = append(dst, '/')
		}
		dst = append(dst, k.Name...)
		dst = append(dst, '=')
		if k.Column >= v.NumColumns() || v.IsNull(k.Column) {
			return nil, invalidf("partition column %s is null", k.Name)
		}
		switch k.Kind {
		case Int:
			dst = strconv.AppendInt(dst, v.Int64(k.Column), 10)
		case Date:
			day, err := k.dayOf(v.Int64(k.Column))
			if err != nil {
				return nil, err
			}
			dst = day.AppendFormat(dst, time.DateOnly)
		default:
			b := v.StringBytes(k.Column)
			if check && !validStringValue(b) {
				// The slow path says which rule the value breaks.
				_, err := k.Canonical(string(b))
				return nil, err
			}
			dst = append(dst, b...)
		}
	}
	return dst, nil
}

// validStringValue is Canonical's rule for strings, on bytes.
func validStringValue(b []byte) bool {
	if len(b) == 0 || len(b) > MaxValueBytes || !utf8.Valid(b) || bytes.ContainsAny(b, "/=,") || len(bytes.TrimSpace(b)) != len(b) {
		return false
	}
	return bytes.IndexFunc(b, unicode.IsControl) < 0
}
