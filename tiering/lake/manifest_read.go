package lake

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/twmb/avro/ocf"
)

// maxManifestBytes bounds a manifest or manifest list Floe reads back.
const maxManifestBytes = 256 << 20

// ReadManifestList reads a snapshot's manifest list (by its URI).
func (t *Table) ReadManifestList(ctx context.Context, uri string) ([]ManifestFile, error) {
	body, err := t.readURI(ctx, uri, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	return decodeManifestList(uri, body)
}

// decodeManifestList decodes a manifest list's bytes.
func decodeManifestList(uri string, body []byte) ([]ManifestFile, error) {
	r, err := ocf.NewReader(bytes.NewReader(body), ocf.WithMaxBlockBytes(maxManifestBytes), ocf.WithMaxDecompressedBlockBytes(maxManifestBytes))
	if err != nil {
		return nil, fmt.Errorf("%w: manifest list %s: %v", ErrInvalidMetadata, uri, err)
	}
	defer r.Close()
	var out []ManifestFile
	for {
		var v struct {
			Path              string `avro:"manifest_path"`
			Length            int64  `avro:"manifest_length"`
			SpecID            int32  `avro:"partition_spec_id"`
			Content           int32  `avro:"content"`
			SequenceNumber    int64  `avro:"sequence_number"`
			MinSequenceNumber int64  `avro:"min_sequence_number"`
			AddedSnapshotID   int64  `avro:"added_snapshot_id"`
			Added             int32  `avro:"added_files_count"`
			Existing          int32  `avro:"existing_files_count"`
			Deleted           int32  `avro:"deleted_files_count"`
			AddedRows         int64  `avro:"added_rows_count"`
			ExistingRows      int64  `avro:"existing_rows_count"`
			DeletedRows       int64  `avro:"deleted_rows_count"`
			Partitions        *[]struct {
				ContainsNull bool    `avro:"contains_null"`
				ContainsNaN  *bool   `avro:"contains_nan"`
				Lower        *[]byte `avro:"lower_bound"`
				Upper        *[]byte `avro:"upper_bound"`
			} `avro:"partitions"`
			KeyMetadata *[]byte `avro:"key_metadata"`
		}
		if err := r.Decode(&v); err != nil {
			if isEOF(err) {
				return out, nil
			}
			return nil, fmt.Errorf("%w: manifest list %s: %v", ErrInvalidMetadata, uri, err)
		}
		mf := ManifestFile{Path: v.Path, Length: v.Length, SpecID: int(v.SpecID), SequenceNumber: v.SequenceNumber,
			MinSequenceNumber: v.MinSequenceNumber, AddedSnapshotID: v.AddedSnapshotID, Added: int(v.Added),
			Existing: int(v.Existing), Deleted: int(v.Deleted), AddedRows: v.AddedRows, ExistingRows: v.ExistingRows,
			DeletedRows: v.DeletedRows}
		if v.Partitions != nil {
			for _, p := range *v.Partitions {
				fs := FieldSummary{ContainsNull: p.ContainsNull}
				if p.Lower != nil {
					fs.Lower = *p.Lower
				}
				if p.Upper != nil {
					fs.Upper = *p.Upper
				}
				mf.Partitions = append(mf.Partitions, fs)
			}
		}
		out = append(out, mf)
	}
}

func isEOF(err error) bool { return err == io.EOF }

// ReadManifest reads a manifest's entries (by its URI): each data file's
// status, path, partition values (by field name), counts and size.
func (t *Table) ReadManifest(ctx context.Context, uri string) ([]ManifestEntry, error) {
	body, err := t.readURI(ctx, uri, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	r, err := ocf.NewReader(bytes.NewReader(body), ocf.WithMaxBlockBytes(maxManifestBytes), ocf.WithMaxDecompressedBlockBytes(maxManifestBytes))
	if err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", ErrInvalidMetadata, uri, err)
	}
	defer r.Close()
	var out []ManifestEntry
	for {
		var v map[string]any
		if err := r.Decode(&v); err != nil {
			if isEOF(err) {
				return out, nil
			}
			return nil, fmt.Errorf("%w: manifest %s: %v", ErrInvalidMetadata, uri, err)
		}
		df, _ := v["data_file"].(map[string]any)
		part, _ := df["partition"].(map[string]any)
		e := ManifestEntry{Status: int(asInt(v["status"])), SnapshotID: asInt(v["snapshot_id"]), SequenceNumber: asInt(v["sequence_number"]),
			File: DataFile{RecordCount: asInt(df["record_count"]), SizeBytes: asInt(df["file_size_in_bytes"]), PartitionByName: part}}
		e.File.Path, _ = df["file_path"].(string)
		if e.File.Path == "" {
			return nil, fmt.Errorf("%w: manifest %s: an entry without a file path", ErrInvalidMetadata, uri)
		}
		e.File.ValueCounts, e.File.NullCounts = intMap(df["value_counts"], asInt), intMap(df["null_value_counts"], asInt)
		e.File.LowerBounds = intMap(df["lower_bounds"], asBytes)
		e.File.UpperBounds = intMap(df["upper_bounds"], asBytes)
		out = append(out, e)
	}
}

// asInt is an Avro int or long decoded generically (0: null or neither).
func asInt(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

// intMap reads an Iceberg int-keyed map (an Avro array of key-value
// records, decoded generically); nil when null or empty.
func intMap[V any](v any, value func(any) V) map[int]V {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return nil
	}
	out := make(map[int]V, len(arr))
	for _, kv := range arr {
		if m, ok := kv.(map[string]any); ok {
			out[int(asInt(m["key"]))] = value(m["value"])
		}
	}
	return out
}

func asBytes(v any) []byte {
	b, _ := v.([]byte)
	return b
}

// Live says whether the entry's file is in the snapshot: added or kept,
// not deleted by it.
func (e ManifestEntry) Live() bool { return e.Status != statusDeleted }
