package dataio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
)

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // spans several buffer fills
	in := "a\r\n\n" + long + "\nlast"
	lr := NewLineReader(strings.NewReader(in))
	for i, want := range []string{"a", "", long, "last"} {
		got, err := lr.Next()
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if string(got) != want || lr.Line() != i+1 {
			t.Fatalf("line %d: got %d bytes (line %d), want %d", i+1, len(got), lr.Line(), len(want))
		}
	}
	if _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v", err)
	}
}

// TestEachLineReportsLine: the first bad line stops the run with its
// number and the codec's error; the rows before it were appended.
func TestEachLineReportsLine(t *testing.T) {
	s, err := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	if err != nil {
		t.Fatal(err)
	}
	codec, err := record.NewJSONCodec(s)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       string
		wantRows int64
		wantLine string
		wantErr  error
	}{
		{"clean", "{\"id\":1}\n\n{\"id\":2,\"name\":\"b\"}\r\n{\"id\":3}", 3, "", nil},
		{"byte order mark", "\xef\xbb\xbf{\"id\":1}\n{\"id\":2}\n", 2, "", nil},
		{"type error", "{\"id\":1}\n  \n{\"id\":2}\n{\"id\":\"three\"}\n{\"id\":4}\n", 2, "line 4: ", record.ErrWrongType},
		{"malformed", "{\"id\":1}\n{\"id\":2,\n", 1, "line 2: ", record.ErrInvalidJSON},
		{"missing column", "{\"name\":\"x\"}\n", 0, "line 1: ", record.ErrNullNotAllowed},
		{"unknown column", "{\"id\":1}\n{\"id\":2,\"nope\":1}\n", 1, "line 2: ", record.ErrUnknownColumn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rows int64
			st, err := EachLine(t.Context(), strings.NewReader(tc.in), func(_ context.Context, obj []byte) error {
				if _, err := codec.AppendRow(nil, obj); err != nil {
					return err
				}
				rows++
				return nil
			})
			if st.Rows != tc.wantRows || rows != tc.wantRows {
				t.Fatalf("accepted %d rows (appended %d), want %d", st.Rows, rows, tc.wantRows)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !strings.HasPrefix(err.Error(), tc.wantLine) {
				t.Fatalf("err = %v, want %q and %v", err, tc.wantLine, tc.wantErr)
			}
			var ce *record.ColumnError
			if tc.wantErr != record.ErrInvalidJSON && (!errors.As(err, &ce) || !strings.Contains(err.Error(), "column")) {
				t.Fatalf("err = %v, want a column error", err)
			}
		})
	}
}

// FuzzLineReader: lines read back, joined, give the input without its line
// endings.
func FuzzLineReader(f *testing.F) {
	f.Add("a\nb\r\n\nc")
	f.Add("")
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		lr := NewLineReader(strings.NewReader(in))
		var lines []string
		for {
			line, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(line))
		}
		want := strings.ReplaceAll(in, "\r\n", "\n")
		want = strings.TrimSuffix(want, "\n")
		got := strings.Join(lines, "\n")
		if in != "" && got != want && !strings.Contains(in, "\r") {
			t.Fatalf("lines %q from %q", lines, in)
		}
		if lr.Line() != len(lines) {
			t.Fatalf("counted %d lines, returned %d", lr.Line(), len(lines))
		}
	})
}
