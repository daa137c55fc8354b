package lake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// DataFile is a Parquet file of the table as a manifest lists it: where
// it is, its partition's values, its size and the statistics engines
// prune with.
type DataFile struct {
	Path        string
	Partition   []PartitionValue // one per field of the partition spec, in order
	RecordCount int64
	SizeBytes   int64
	// Per field id: values (nulls included) and nulls of each top-level
	// column, and the lower and upper bounds of the columns that have
	// them, in Iceberg's single-value binary form.
	ValueCounts, NullCounts  map[int]int64
	LowerBounds, UpperBounds map[int][]byte
	// PartitionByName is the partition as a manifest read back gives it:
	// each field's value by name (ReadManifest; writing uses Partition).
	PartitionByName map[string]any
}

// PartitionValue is a data file's value of one partition field: Iceberg
// type (as its source column's) and the value, int32 for int and date,
// int64 for long, string for string.
type PartitionValue struct {
	Type  string
	Value any
}

// Entry statuses (manifest_entry.status).
const (
	statusExisting = 0
	statusAdded    = 1
	statusDeleted  = 2
)

// ManifestEntry is a data file's line in a manifest: added by the
// snapshot writing the manifest, carried over from an earlier one
// (existing, with the snapshot and sequence number that added it), or
// deleted by this snapshot.
type ManifestEntry struct {
	Status         int
	SnapshotID     int64
	SequenceNumber int64 // of the snapshot that added the file; 0: this snapshot's (inherited)
	File           DataFile
}

// manifestEntrySchema is the Avro schema of a manifest of the given
// partition spec (the spec's "Manifests" section, format version 2, with
// its field ids).
func manifestEntrySchema(spec PartitionSpec, types []string) (string, error) {
	partFields := make([]any, len(spec.Fields))
	for i, f := range spec.Fields {
		t, err := avroPartitionType(types[i])
		if err != nil {
			return "", err
		}
		partFields[i] = avroField(f.Name, []any{"null", t}, f.FieldID, nil)
	}
	intLongMap := func(keyID, valueID int) any {
		return []any{"null", map[string]any{"type": "array", "logicalType": "map", "items": map[string]any{
			"type": "record", "name": fmt.Sprintf("k%d_v%d", keyID, valueID), "fields": []any{
				avroField("key", "int", keyID, nil), avroField("value", "long", valueID, nil)}}}}
	}
	intBytesMap := func(keyID, valueID int) any {
		return []any{"null", map[string]any{"type": "array", "logicalType": "map", "items": map[string]any{
			"type": "record", "name": fmt.Sprintf("k%d_v%d", keyID, valueID), "fields": []any{
				avroField("key", "int", keyID, nil), avroField("value", "bytes", valueID, nil)}}}}
	}
	null := json.RawMessage("null")
	dataFile := map[string]any{"type": "record", "name": "r2", "fields": []any{
		avroField("content", "int", 134, nil),
		avroField("file_path", "string", 100, nil),
		avroField("file_format", "string", 101, nil),
		avroField("partition", map[string]any{"type": "record", "name": "r102", "fields": partFields}, 102, nil),
		avroField("record_count", "long", 103, nil),
		avroField("file_size_in_bytes", "long", 104, nil),
		avroField("column_sizes", intLongMap(117, 118), 108, null),
		avroField("value_counts", intLongMap(119, 120), 109, null),
		avroField("null_value_counts", intLongMap(121, 122), 110, null),
		avroField("nan_value_counts", intLongMap(138, 139), 137, null),
		avroField("lower_bounds", intBytesMap(126, 127), 125, null),
		avroField("upper_bounds", intBytesMap(129, 130), 128, null),
		avroField("key_metadata", []any{"null", "bytes"}, 131, null),
		avroField("split_offsets", []any{"null", map[string]any{"type": "array", "items": "long", "element-id": 133}}, 132, null),
		avroField("equality_ids", []any{"null", map[string]any{"type": "array", "items": "int", "element-id": 136}}, 135, null),
		avroField("sort_order_id", []any{"null", "int"}, 140, null),
	}}
	entry := map[string]any{"type": "record", "name": "manifest_entry", "fields": []any{
		avroField("status", "int", 0, nil),
		avroField("snapshot_id", []any{"null", "long"}, 1, null),
		avroField("sequence_number", []any{"null", "long"}, 3, null),
		avroField("file_sequence_number", []any{"null", "long"}, 4, null),
		avroField("data_file", dataFile, 2, nil),
	}}
	b, err := json.Marshal(entry)
	return string(b), err
}

// manifestListSchema is the Avro schema of a manifest list (version 2).
var manifestListSchema = func() string {
	null := json.RawMessage("null")
	summary := map[string]any{"type": "record", "name": "r508", "fields": []any{
		avroField("contains_null", "boolean", 509, nil),
		avroField("contains_nan", []any{"null", "boolean"}, 518, null),
		avroField("lower_bound", []any{"null", "bytes"}, 510, null),
		avroField("upper_bound", []any{"null", "bytes"}, 511, null),
	}}
	s := map[string]any{"type": "record", "name": "manifest_file", "fields": []any{
		avroField("manifest_path", "string", 500, nil),
		avroField("manifest_length", "long", 501, nil),
		avroField("partition_spec_id", "int", 502, nil),
		avroField("content", "int", 517, nil),
		avroField("sequence_number", "long", 515, nil),
		avroField("min_sequence_number", "long", 516, nil),
		avroField("added_snapshot_id", "long", 503, nil),
		avroField("added_files_count", "int", 504, nil),
		avroField("existing_files_count", "int", 505, nil),
		avroField("deleted_files_count", "int", 506, nil),
		avroField("added_rows_count", "long", 512, nil),
		avroField("existing_rows_count", "long", 513, nil),
		avroField("deleted_rows_count", "long", 514, nil),
		avroField("partitions", []any{"null", map[string]any{"type": "array", "items": summary, "element-id": 508}}, 507, null),
		avroField("key_metadata", []any{"null", "bytes"}, 519, null),
	}}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a constant schema
	}
	return string(b)
}()

func avroField(name string, typ any, fieldID int, def any) map[string]any {
	f := map[string]any{"name": name, "type": typ, "field-id": fieldID}
	if def != nil {
		f["default"] = def
	}
	return f
}

// avroPartitionType is the Avro type of a partition value of an Iceberg
// type: identity keeps the source column's type.
func avroPartitionType(icebergType string) (any, error) {
	switch icebergType {
	case "int", "long", "string", "boolean", "float", "double":
		return icebergType, nil
	case "date":
		return map[string]any{"type": "int", "logicalType": "date"}, nil
	}
	return nil, fmt.Errorf("%w: partition column of type %s", ErrUnsupported, icebergType)
}

// ManifestMeta is what a manifest's file header says about its entries.
type ManifestMeta struct {
	Schema     Schema
	Spec       PartitionSpec
	SpecTypes  []string // the partition fields' Iceberg types
	SnapshotID int64
}

// WriteManifest encodes a manifest of entries (Avro object container
// file, deflate).
func WriteManifest(meta ManifestMeta, entries []ManifestEntry) ([]byte, error) {
	schemaJSON, err := manifestEntrySchema(meta.Spec, meta.SpecTypes)
	if err != nil {
		return nil, err
	}
	schema, err := avro.Parse(schemaJSON)
	if err != nil {
		return nil, fmt.Errorf("lake: manifest schema: %w", err)
	}
	tableSchema, err := json.Marshal(meta.Schema)
	if err != nil {
		return nil, err
	}
	specFields, err := json.Marshal(meta.Spec.Fields)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, schema, ocf.WithCodec(ocf.DeflateCodec(6)), ocf.WithMetadata(map[string][]byte{
		"schema":            tableSchema,
		"schema-id":         []byte(strconv.Itoa(meta.Schema.ID)),
		"partition-spec":    specFields,
		"partition-spec-id": []byte(strconv.Itoa(meta.Spec.ID)),
		"format-version":    []byte("2"),
		"content":           []byte("data"),
	}))
	if err != nil {
		return nil, fmt.Errorf("lake: manifest: %w", err)
	}
	for _, e := range entries {
		if err := w.Encode(entryValue(meta, e)); err != nil {
			return nil, fmt.Errorf("lake: manifest entry %s: %w", e.File.Path, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("lake: manifest: %w", err)
	}
	return buf.Bytes(), nil
}

func entryValue(meta ManifestMeta, e ManifestEntry) map[string]any {
	f := e.File
	part := map[string]any{}
	for i, pf := range meta.Spec.Fields {
		if i < len(f.Partition) {
			part[pf.Name] = f.Partition[i].Value
		}
	}
	var seq, fileSeq any // null: inherited from the manifest list's sequence number
	if e.Status != statusAdded {
		seq, fileSeq = e.SequenceNumber, e.SequenceNumber
	}
	return map[string]any{
		"status":               e.Status,
		"snapshot_id":          e.SnapshotID,
		"sequence_number":      seq,
		"file_sequence_number": fileSeq,
		"data_file": map[string]any{
			"content":            0, // data
			"file_path":          f.Path,
			"file_format":        "PARQUET",
			"partition":          part,
			"record_count":       f.RecordCount,
			"file_size_in_bytes": f.SizeBytes,
			"column_sizes":       nil,
			"value_counts":       longMap(f.ValueCounts),
			"null_value_counts":  longMap(f.NullCounts),
			"nan_value_counts":   nil,
			"lower_bounds":       bytesMap(f.LowerBounds),
			"upper_bounds":       bytesMap(f.UpperBounds),
			"key_metadata":       nil,
			"split_offsets":      nil,
			"equality_ids":       nil,
			"sort_order_id":      nil,
		},
	}
}

// longMap and bytesMap are Iceberg's int-keyed maps as Avro arrays of
// key-value records, in key order; nil when empty.
func longMap(m map[int]int64) any {
	if len(m) == 0 {
		return nil
	}
	out := make([]any, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, map[string]any{"key": int32(k), "value": m[k]})
	}
	return out
}

func bytesMap(m map[int][]byte) any {
	if len(m) == 0 {
		return nil
	}
	out := make([]any, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, map[string]any{"key": int32(k), "value": m[k]})
	}
	return out
}

// ManifestFile is a manifest's line in a manifest list.
type ManifestFile struct {
	Path                                 string
	Length                               int64
	SpecID                               int
	SequenceNumber                       int64 // of the snapshot that wrote the manifest
	MinSequenceNumber                    int64 // the least of its live files'
	AddedSnapshotID                      int64
	Added, Existing, Deleted             int
	AddedRows, ExistingRows, DeletedRows int64
	Partitions                           []FieldSummary
}

// FieldSummary sums up one partition field's values over a manifest.
type FieldSummary struct {
	ContainsNull bool
	Lower, Upper []byte
}

// WriteManifestList encodes the manifest list of a snapshot.
func WriteManifestList(snapshotID int64, parentID *int64, sequenceNumber int64, manifests []ManifestFile) ([]byte, error) {
	schema, err := avro.Parse(manifestListSchema)
	if err != nil {
		return nil, fmt.Errorf("lake: manifest list schema: %w", err)
	}
	meta := map[string][]byte{
		"snapshot-id":     []byte(strconv.FormatInt(snapshotID, 10)),
		"sequence-number": []byte(strconv.FormatInt(sequenceNumber, 10)),
		"format-version":  []byte("2"),
	}
	if parentID != nil {
		meta["parent-snapshot-id"] = []byte(strconv.FormatInt(*parentID, 10))
	} else {
		meta["parent-snapshot-id"] = []byte("null")
	}
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, schema, ocf.WithCodec(ocf.DeflateCodec(6)), ocf.WithMetadata(meta))
	if err != nil {
		return nil, fmt.Errorf("lake: manifest list: %w", err)
	}
	for _, m := range manifests {
		var parts any
		if len(m.Partitions) > 0 {
			list := make([]any, len(m.Partitions))
			for i, p := range m.Partitions {
				list[i] = map[string]any{"contains_null": p.ContainsNull, "contains_nan": nil,
					"lower_bound": nilIfEmpty(p.Lower), "upper_bound": nilIfEmpty(p.Upper)}
			}
			parts = list
		}
		v := map[string]any{
			"manifest_path": m.Path, "manifest_length": m.Length, "partition_spec_id": int32(m.SpecID),
			"content": int32(0), "sequence_number": m.SequenceNumber, "min_sequence_number": m.MinSequenceNumber,
			"added_snapshot_id": m.AddedSnapshotID, "added_files_count": int32(m.Added),
			"existing_files_count": int32(m.Existing), "deleted_files_count": int32(m.Deleted),
			"added_rows_count": m.AddedRows, "existing_rows_count": m.ExistingRows, "deleted_rows_count": m.DeletedRows,
			"partitions": parts, "key_metadata": nil,
		}
		if err := w.Encode(v); err != nil {
			return nil, fmt.Errorf("lake: manifest list entry %s: %w", m.Path, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("lake: manifest list: %w", err)
	}
	return buf.Bytes(), nil
}

func nilIfEmpty(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
