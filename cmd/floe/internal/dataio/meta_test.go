package dataio

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestMetaSplitter(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		change   Change
		err      error
	}{
		{`{"id":1,"name":"a"}`, `{"id":1,"name":"a"}`, ChangeWrite, nil},
		{`{"id":1,"_bucket":2,"_offset":7,"_timestamp":"2026-12-01T10:00:00.000Z"}`, `{"id":1}`, ChangeWrite, nil},
		{`{"id":1,"name":"a","_bucket":0,"_offset":1,"_timestamp":"t","_change":"-D"}`, `{"id":1,"name":"a"}`, ChangeDelete, nil},
		{` { "_change" : "-U" , "id" : 1 , "v" : [1,{"_bucket":"}"}] } `, `{"id" : 1,"v" : [1,{"_bucket":"}"}]}`, ChangeSkip, nil},
		{`{"_change":"+I","id":1}`, `{"id":1}`, ChangeWrite, nil},
		{`{"_change":"+U"}`, `{}`, ChangeWrite, nil},
		{`{"_change":"+A","s":"a\"_b"}`, `{"s":"a\"_b"}`, ChangeWrite, nil},
		{`{"s":"\"_change\":\"-D\""}`, `{"s":"\"_change\":\"-D\""}`, ChangeWrite, nil}, // in a value: not a member
		{`{"_nope":1}`, `{"_nope":1}`, ChangeWrite, nil},                               // not a meta field: the codec refuses it
		{`{"_change":"-X"}`, "", 0, ErrBadChange},
		{`{"_change":1}`, "", 0, ErrBadChange},
		{`{"_change":"-D","_change":"+I"}`, "", 0, ErrBadChange},
		// What the scan cannot follow comes back as it was.
		{`{"_bucket":1,`, `{"_bucket":1,`, ChangeWrite, nil},
		{`{"_bucket":1} x`, `{"_bucket":1} x`, ChangeWrite, nil},
		{`["_bucket"]`, `["_bucket"]`, ChangeWrite, nil},
		{`{"_bucket":"open}`, `{"_bucket":"open}`, ChangeWrite, nil},
	} {
		var s MetaSplitter
		got, change, err := s.Split([]byte(tc.in))
		switch {
		case tc.err != nil:
			if !errors.Is(err, tc.err) {
				t.Errorf("split(%s): %v, want %v", tc.in, err, tc.err)
			}
		case err != nil || string(got) != tc.want || change != tc.change:
			t.Errorf("split(%s) = %s, %d, %v; want %s, %d", tc.in, got, change, err, tc.want, tc.change)
		}
	}
}

// FuzzMetaSplitter: for a valid JSON object with distinct keys, the split
// is a valid object with the same members less the meta fields.
func FuzzMetaSplitter(f *testing.F) {
	f.Add(`{"id":1,"_bucket":2,"_change":"+U"}`)
	f.Add(`{"a":"\\\"_b","_offset":[{"x":"]"}],"c":null}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		var s MetaSplitter
		got, _, err := s.Split([]byte(in))
		var before map[string]json.RawMessage
		if err != nil || json.Unmarshal([]byte(in), &before) != nil || hasDuplicateKeys(in) {
			return
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("split(%s) = %s: %v", in, got, err)
		}
		for _, k := range []string{"_bucket", "_offset", "_timestamp", "_change"} {
			if _, ok := before[k]; ok && !strings.Contains(in, `"`+k+`"`) {
				return // written with escapes: kept, and refused by the codec
			}
			delete(before, k)
		}
		if !maps.EqualFunc(before, after, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("split(%s) = %s", in, got)
		}
	})
}

// hasDuplicateKeys reports whether a top-level key of the object in comes
// twice.
func hasDuplicateKeys(in string) bool {
	dec := json.NewDecoder(strings.NewReader(in))
	if _, err := dec.Token(); err != nil {
		return true
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		key, _ := tok.(string)
		if seen[key] {
			return true
		}
		seen[key] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return true
		}
	}
	return false
}
