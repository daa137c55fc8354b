package lake

import (
	"testing"
)

// FuzzDecodeMetadata: metadata and manifest lists read back from the
// store are decoded without panicking whatever the bytes, and a manifest
// list that decodes was a valid Avro file of manifest_file records.
func FuzzDecodeMetadata(f *testing.F) {
	f.Add([]byte(`{"format-version":2,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":true,"type":{"type":"list","element-id":2,"element":"long","element-required":false}}]}],"current-schema-id":0}`))
	f.Add([]byte(`{"format-version":2,"current-snapshot-id":7}`))
	list, err := WriteManifestList(1, nil, 1, []ManifestFile{{Path: "file:///m.avro", Length: 10, Partitions: []FieldSummary{{Lower: []byte{1}}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(list)
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := ParseMetadata(b); err == nil && m.CurrentSchema() == nil {
			t.Fatalf("metadata without its current schema parsed: %s", b)
		}
		_, _ = decodeManifestList("file:///fuzz.avro", b)
	})
}
