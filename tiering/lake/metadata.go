package lake

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Metadata is an Iceberg table's metadata file (format version 2): its
// schemas, partition spec and snapshots. Each commit writes a new one,
// vN.metadata.json, next to the previous ones.
type Metadata struct {
	FormatVersion      int               `json:"format-version"`
	TableUUID          string            `json:"table-uuid"`
	Location           string            `json:"location"`
	LastSequenceNumber int64             `json:"last-sequence-number"`
	LastUpdatedMs      int64             `json:"last-updated-ms"`
	LastColumnID       int               `json:"last-column-id"`
	Schemas            []Schema          `json:"schemas"`
	CurrentSchemaID    int               `json:"current-schema-id"`
	PartitionSpecs     []PartitionSpec   `json:"partition-specs"`
	DefaultSpecID      int               `json:"default-spec-id"`
	LastPartitionID    int               `json:"last-partition-id"`
	Properties         map[string]string `json:"properties,omitempty"`
	CurrentSnapshotID  *int64            `json:"current-snapshot-id,omitempty"`
	Snapshots          []Snapshot        `json:"snapshots,omitempty"`
	SnapshotLog        []SnapshotLog     `json:"snapshot-log,omitempty"`
	MetadataLog        []MetadataLog     `json:"metadata-log,omitempty"`
	SortOrders         []SortOrder       `json:"sort-orders"`
	DefaultSortOrderID int               `json:"default-sort-order-id"`
	Refs               map[string]Ref    `json:"refs,omitempty"`
}

// PartitionSpec says how a table's rows split into partitions: for Floe,
// identity on each partition column.
type PartitionSpec struct {
	ID     int              `json:"spec-id"`
	Fields []PartitionField `json:"fields"`
}

// PartitionField is one field of a partition spec.
type PartitionField struct {
	SourceID  int    `json:"source-id"`
	FieldID   int    `json:"field-id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// firstPartitionFieldID is where partition field ids start, as the spec
// has them (the ids below are the schema's).
const firstPartitionFieldID = 1000

// Snapshot is the table's state after one commit: the manifest list
// naming its data files, and a summary, where Floe records the log offset
// each bucket's rows in the lake reach (SummaryLogOffsets).
type Snapshot struct {
	ID             int64             `json:"snapshot-id"`
	ParentID       *int64            `json:"parent-snapshot-id,omitempty"`
	SequenceNumber int64             `json:"sequence-number"`
	TimestampMs    int64             `json:"timestamp-ms"`
	ManifestList   string            `json:"manifest-list"`
	Summary        map[string]string `json:"summary"`
	SchemaID       *int              `json:"schema-id,omitempty"`
}

// SnapshotLog and MetadataLog are the history entries of the metadata.
type SnapshotLog struct {
	SnapshotID  int64 `json:"snapshot-id"`
	TimestampMs int64 `json:"timestamp-ms"`
}

type MetadataLog struct {
	MetadataFile string `json:"metadata-file"`
	TimestampMs  int64  `json:"timestamp-ms"`
}

// SortOrder is a sort order; Floe's tables have the unsorted one only.
type SortOrder struct {
	OrderID int   `json:"order-id"`
	Fields  []any `json:"fields"`
}

// Ref is a named branch or tag; "main" is the current snapshot.
type Ref struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"`
}

// NewMetadata is the metadata of a new, empty table at location (the URI
// its files live under), with the given schema and identity partitioning
// on the named columns.
func NewMetadata(location, tableUUID string, schema Schema, lastColumnID int, partitionBy []string, props map[string]string, nowMs int64) (*Metadata, error) {
	spec := PartitionSpec{ID: 0, Fields: []PartitionField{}}
	for i, name := range partitionBy {
		f, ok := schema.field(name)
		if !ok {
			return nil, fmt.Errorf("%w: partition column %s is not in the schema", ErrUnsupported, name)
		}
		spec.Fields = append(spec.Fields, PartitionField{SourceID: f.ID, FieldID: firstPartitionFieldID + i, Name: name, Transform: "identity"})
	}
	return &Metadata{
		FormatVersion: 2, TableUUID: tableUUID, Location: location, LastUpdatedMs: nowMs,
		LastColumnID: lastColumnID, Schemas: []Schema{schema}, CurrentSchemaID: schema.ID,
		PartitionSpecs: []PartitionSpec{spec}, LastPartitionID: firstPartitionFieldID + len(partitionBy) - 1,
		Properties: props, SortOrders: []SortOrder{{OrderID: 0, Fields: []any{}}},
	}, nil
}

// field finds a top-level field by name.
func (s Schema) field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// CurrentSchema is the schema the current snapshot's rows have.
func (m *Metadata) CurrentSchema() *Schema {
	for i := range m.Schemas {
		if m.Schemas[i].ID == m.CurrentSchemaID {
			return &m.Schemas[i]
		}
	}
	return nil
}

// Spec is the partition spec files are written with.
func (m *Metadata) Spec() PartitionSpec {
	for _, s := range m.PartitionSpecs {
		if s.ID == m.DefaultSpecID {
			return s
		}
	}
	return PartitionSpec{}
}

// CurrentSnapshot is the main branch's snapshot; nil before the first.
func (m *Metadata) CurrentSnapshot() *Snapshot {
	if m.CurrentSnapshotID == nil {
		return nil
	}
	return m.Snapshot(*m.CurrentSnapshotID)
}

// Snapshot finds a snapshot by id.
func (m *Metadata) Snapshot(id int64) *Snapshot {
	for i := range m.Snapshots {
		if m.Snapshots[i].ID == id {
			return &m.Snapshots[i]
		}
	}
	return nil
}

// SetSchema makes s current: a schema equal to one the table has takes
// that one's id, a new one is added (schema evolution; its fields keep
// the ids NewSchema reused). lastColumnID is what NewSchema left.
func (m *Metadata) SetSchema(s Schema, lastColumnID int) {
	m.LastColumnID = max(m.LastColumnID, lastColumnID)
	for _, have := range m.Schemas {
		if sameFields(have, s) {
			m.CurrentSchemaID = have.ID
			return
		}
	}
	s.ID = 0
	for _, have := range m.Schemas {
		s.ID = max(s.ID, have.ID+1)
	}
	m.Schemas = append(m.Schemas, s)
	m.CurrentSchemaID = s.ID
}

func sameFields(a, b Schema) bool {
	ja, err1 := json.Marshal(a.Fields)
	jb, err2 := json.Marshal(b.Fields)
	return err1 == nil && err2 == nil && string(ja) == string(jb) && slices.Equal(a.IdentifierFieldIDs, b.IdentifierFieldIDs)
}

// AddSnapshot makes snap the current snapshot of the main branch, the
// child of the current one, with the next sequence number, and records
// prevFile (the metadata file this one replaces) in the metadata log.
func (m *Metadata) AddSnapshot(snap Snapshot, prevFile string) {
	if cur := m.CurrentSnapshotID; cur != nil {
		parent := *cur
		snap.ParentID = &parent
	}
	m.LastSequenceNumber++
	snap.SequenceNumber = m.LastSequenceNumber
	schemaID := m.CurrentSchemaID
	snap.SchemaID = &schemaID
	m.Snapshots = append(m.Snapshots, snap)
	id := snap.ID
	m.CurrentSnapshotID = &id
	m.SnapshotLog = append(m.SnapshotLog, SnapshotLog{SnapshotID: id, TimestampMs: snap.TimestampMs})
	if m.Refs == nil {
		m.Refs = map[string]Ref{}
	}
	m.Refs["main"] = Ref{SnapshotID: id, Type: "branch"}
	if prevFile != "" {
		m.MetadataLog = append(m.MetadataLog, MetadataLog{MetadataFile: prevFile, TimestampMs: m.LastUpdatedMs})
		if n := len(m.MetadataLog); n > maxMetadataLog {
			m.MetadataLog = slices.Delete(m.MetadataLog, 0, n-maxMetadataLog)
		}
	}
	m.LastUpdatedMs = snap.TimestampMs
}

// maxMetadataLog bounds the previous metadata files a metadata file
// lists (Iceberg's write.metadata.previous-versions-max default).
const maxMetadataLog = 100

// MaxSnapshots bounds the snapshots a lake table keeps
// (ExpireSnapshots), whatever its retention.
const MaxSnapshots = 1000

// Marshal is the metadata file's bytes.
func (m *Metadata) Marshal() ([]byte, error) { return json.MarshalIndent(m, "", "  ") }

// ParseMetadata reads a metadata file.
func ParseMetadata(b []byte) (*Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidMetadata, err)
	}
	if m.FormatVersion != 2 {
		return nil, fmt.Errorf("%w: format version %d, Floe writes 2", ErrInvalidMetadata, m.FormatVersion)
	}
	if m.CurrentSchema() == nil {
		return nil, fmt.Errorf("%w: no schema %d", ErrInvalidMetadata, m.CurrentSchemaID)
	}
	if m.CurrentSnapshotID != nil && m.CurrentSnapshot() == nil {
		return nil, fmt.Errorf("%w: no snapshot %d", ErrInvalidMetadata, *m.CurrentSnapshotID)
	}
	return &m, nil
}

// ExpireSnapshots drops the snapshots taken more than retention before
// nowMs, never the current one, and returns them: Iceberg's snapshot
// expiry, as datalake.retention asks. Engines can no longer read the
// table as of a dropped snapshot; the files only it referenced are the
// caller's to delete once the metadata without it is committed.
//
// Beyond retention, at most MaxSnapshots stay (the newest): the metadata
// file lists them all and is written again at every commit, so a short
// datalake.freshness under a long retention would grow it without bound.
func (m *Metadata) ExpireSnapshots(nowMs int64, retention time.Duration) []Snapshot {
	cutoff := int64(math.MinInt64)
	if retention > 0 {
		cutoff = nowMs - retention.Milliseconds()
	}
	extra := len(m.Snapshots) - MaxSnapshots // the oldest beyond the bound go too
	var kept, dropped []Snapshot
	for i, s := range m.Snapshots {
		if (s.TimestampMs < cutoff || i < extra) && (m.CurrentSnapshotID == nil || s.ID != *m.CurrentSnapshotID) {
			dropped = append(dropped, s)
		} else {
			kept = append(kept, s)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	m.Snapshots = kept
	gone := map[int64]bool{}
	for _, s := range dropped {
		gone[s.ID] = true
	}
	m.SnapshotLog = slices.DeleteFunc(m.SnapshotLog, func(l SnapshotLog) bool { return gone[l.SnapshotID] })
	for i := range m.Snapshots {
		if p := m.Snapshots[i].ParentID; p != nil && gone[*p] {
			m.Snapshots[i].ParentID = nil // its parent is gone, as after Iceberg's expiry
		}
	}
	return dropped
}
