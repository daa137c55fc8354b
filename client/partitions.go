package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/floedb/floe/internal/partition"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Partitioned tables (docs/partitions.md). A partitioned table's handle
// routes rows: its writers send each row to the handle of the row's
// partition (Table.Partition), which has the partition's buckets; the
// partition's id is what its buckets are keyed by on the wire. Handles of
// partitions share the table's schema and settings.

// ErrUnknownPartition matches a partition that does not exist: never
// created, dropped, or, for a writer, one the table does not create on
// write (partition.dynamic-create=false). It is transport's sentinel: the
// servers answer with it too.
var ErrUnknownPartition = transport.ErrUnknownPartition

// PartitionInfo describes one partition of a partitioned table.
type PartitionInfo struct {
	// ID is the partition's id: its buckets are keyed by it.
	ID uint64 `json:"id"`
	// Name is "dt=2026-12-03", or "region=eu/dt=2026-12-03".
	Name string `json:"name"`
	// Values are the partition's values in partition-key order.
	Values    []string  `json:"values"`
	CreatedAt time.Time `json:"created_at"`
	// Origin is how it was created: explicit, on-write or auto.
	Origin string `json:"origin"`

	// Filled by Admin.ListPartitions: the partition's buckets, those with
	// a leader and every replica in sync, those offline, and the bytes of
	// their committed remote logs.
	Buckets     int32 `json:"buckets,omitempty"`
	InSync      int32 `json:"in_sync,omitempty"`
	Offline     int32 `json:"offline,omitempty"`
	RemoteBytes int64 `json:"remote_bytes,omitempty"`
}

func partitionFromPB(p *pb.PartitionRecord) PartitionInfo {
	origin := "explicit"
	switch p.GetOrigin() {
	case pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE:
		origin = "on-write"
	case pb.PartitionOrigin_PARTITION_ORIGIN_AUTO:
		origin = "auto"
	}
	return PartitionInfo{ID: p.GetId(), Name: p.GetName(), Values: slices.Clone(p.GetValues()),
		CreatedAt: time.UnixMilli(p.GetCreatedAtMs()), Origin: origin}
}

// partitionSet is a partitioned table's handles of its partitions, made
// on first use.
type partitionSet struct {
	mu      sync.Mutex
	byName  map[string]*Table
	opening map[string]*openCall // handles being loaded
}

// openCall is one load of a partition's handle that others wait for.
type openCall struct {
	done chan struct{}
	t    *Table
	err  error
}

// Partitioned reports whether the table is partitioned.
func (t *Table) Partitioned() bool { return t.spec.Partitioned() }

// PartitionKeys are the table's partition columns, in order; empty when
// it is not partitioned.
func (t *Table) PartitionKeys() []string { return t.spec.Names() }

// PartitionInfo describes the partition a partition's handle
// (Table.Partition) is of; nil for a table's handle.
func (t *Table) PartitionInfo() *PartitionInfo {
	if t.part == nil {
		return nil
	}
	p := *t.part
	p.Values = slices.Clone(p.Values)
	return &p
}

// PartitionName returns the name of a partition given as a name in any
// order of its pairs ("dt=2026-12-03") or, with one partition column, a
// bare value ("2026-12-03"), checked and in canonical form.
func (t *Table) PartitionName(name string) (string, error) {
	values, err := t.spec.Parse(name)
	if err != nil {
		return "", pkgerr.Errorf("client", "table %s: %w", t.qualifiedName(), err)
	}
	return t.spec.Name(values), nil
}

// PartitionOf returns the name of the partition a valid row of the table
// belongs to.
func (t *Table) PartitionOf(row []byte) (string, error) {
	if !t.Partitioned() {
		return "", pkgerr.Errorf("client", "table %s is not partitioned", t.qualifiedName())
	}
	name, err := partition.AppendName(t.spec, nil, record.NewRowView(t.schema, row))
	if err != nil {
		return "", pkgerr.Errorf("client", "table %s: %w", t.qualifiedName(), err)
	}
	return string(name), nil
}

// Partitions lists the table's partitions by name, as of now.
func (t *Table) Partitions(ctx context.Context) ([]PartitionInfo, error) {
	if !t.Partitioned() {
		return nil, pkgerr.Errorf("client", "table %s is not partitioned", t.qualifiedName())
	}
	resp, err := t.c.getTable(ctx, t.info.Database, t.info.Name, "")
	if err != nil {
		return nil, err
	}
	if resp.Table.Id != t.tableID {
		return nil, fmt.Errorf("%w: %s had id %d, now %d", ErrTableChanged, t.qualifiedName(), t.tableID, resp.Table.Id)
	}
	out := make([]PartitionInfo, 0, len(resp.Partitions))
	for _, p := range resp.Partitions {
		out = append(out, partitionFromPB(p))
	}
	return out, nil
}

// Partition returns the handle of one partition of a partitioned table
// (name as PartitionName takes it): its buckets are the partition's, its
// writers, scanners and lookups read and write that partition only. The
// handle is made on first use and shared after. A partition that does not
// exist is ErrUnknownPartition.
func (t *Table) Partition(ctx context.Context, name string) (*Table, error) {
	canonical, err := t.PartitionName(name)
	if err != nil {
		return nil, err
	}
	return t.partition(ctx, canonical, false)
}

// partition returns the handle of the partition of a canonical name; with
// create, a partition that does not exist is created if the table creates
// partitions on write.
func (t *Table) partition(ctx context.Context, name string, create bool) (*Table, error) {
	if t.parts == nil {
		return nil, pkgerr.Errorf("client", "table %s is not partitioned", t.qualifiedName())
	}
	ps := t.parts
	ps.mu.Lock()
	if h := ps.byName[name]; h != nil {
		ps.mu.Unlock()
		return h, nil
	}
	call := ps.opening[name]
	if call == nil {
		call = &openCall{done: make(chan struct{})}
		ps.opening[name] = call
		ps.mu.Unlock()
		call.t, call.err = t.openPartition(ctx, name, create)
		ps.mu.Lock()
		delete(ps.opening, name)
		if call.err == nil {
			ps.byName[name] = call.t
		}
		ps.mu.Unlock()
		close(call.done)
	} else {
		ps.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if call.err != nil && create && errors.Is(call.err, ErrUnknownPartition) {
			return t.partition(ctx, name, create) // the other caller did not create it
		}
	}
	return call.t, call.err
}

// partitionForRow returns the handle of a valid row's partition; with
// create, see partition.
func (t *Table) partitionForRow(ctx context.Context, row []byte, create bool, scratch *[]byte) (*Table, error) {
	view := record.NewRowView(t.schema, row)
	name, err := partition.AppendKnownName(t.spec, (*scratch)[:0], view)
	if err == nil {
		*scratch = name
		t.parts.mu.Lock()
		h := t.parts.byName[string(name)] // no allocation: a map lookup by a converted []byte
		t.parts.mu.Unlock()
		if h != nil {
			return h, nil
		}
	}
	// Not a partition this handle knows: the name, checked this time.
	if name, err = partition.AppendName(t.spec, (*scratch)[:0], view); err != nil {
		return nil, pkgerr.Errorf("client", "table %s: %w", t.qualifiedName(), err)
	}
	*scratch = name
	return t.partition(ctx, string(name), create)
}

// openPartition loads a partition's handle; with create, a missing
// partition is created first when the table creates partitions on write.
func (t *Table) openPartition(ctx context.Context, name string, create bool) (*Table, error) {
	resp, err := t.c.getTable(ctx, t.info.Database, t.info.Name, name)
	if errors.Is(err, ErrUnknownPartition) && create && t.dynamicCreate() {
		if err = t.c.createPartitionOnWrite(ctx, t.info.Database, t.info.Name, name); err == nil {
			resp, err = t.c.getTable(ctx, t.info.Database, t.info.Name, name)
		}
	}
	if err != nil {
		if errors.Is(err, ErrUnknownPartition) && create {
			return nil, fmt.Errorf("%w: partition %s of %s does not exist, and the table does not create partitions on write (%s=false): "+
				"add it with floe table partition add", ErrUnknownPartition, name, t.qualifiedName(), tableprop.PartitionDynamicCreate)
		}
		return nil, err
	}
	if resp.Table.Id != t.tableID {
		return nil, fmt.Errorf("%w: %s had id %d, now %d", ErrTableChanged, t.qualifiedName(), t.tableID, resp.Table.Id)
	}
	if resp.Partition == nil {
		return nil, pkgerr.Errorf("client", "table %s: metadata of partition %s without the partition", t.qualifiedName(), name)
	}
	p := partitionFromPB(resp.Partition)
	h := &Table{c: t.c, info: t.info, schema: t.schema, schemaID: t.schemaID, bucketKey: t.bucketKey, keys: t.keys,
		maxBatchBytes: int(resp.MaxBatchBytes), spec: t.spec, part: &p, tableID: t.tableID}
	h.info.ID = p.ID
	h.setPlacement(resp)
	h.setSettings(resp.Table)
	h.setVersions(resp.Table)
	return h, nil
}

// dynamicCreate reports whether the table creates partitions on write.
func (t *Table) dynamicCreate() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.props.DynamicCreate
}

// forgetPartition drops a partition's handle (its partition was dropped),
// so the next row of it loads it again or creates it anew.
func (t *Table) forgetPartition(h *Table) {
	if t.parts == nil || h.part == nil {
		return
	}
	t.parts.mu.Lock()
	if t.parts.byName[h.part.Name] == h {
		delete(t.parts.byName, h.part.Name)
	}
	t.parts.mu.Unlock()
}

// createPartitionOnWrite asks for a partition a writer met.
func (c *Client) createPartitionOnWrite(ctx context.Context, database, table, name string) error {
	req := &pb.CreatePartitionRequest{RequestId: newRequestID(), Database: database, Name: table, Partition: name, IfNotExists: true}
	return c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.CreatePartitionOnWrite(ctx, req)
		return err
	})
}

// CreatePartition adds a partition to a partitioned table: partition is
// "dt=2026-12-03" (pairs in any order) or, with one partition column, the
// bare value. IfNotExists makes an existing one the answer.
func (a *Admin) CreatePartition(ctx context.Context, database, table, partition string, opts ...Option) (*PartitionInfo, error) {
	o := collect(opts)
	req := &pb.CreatePartitionRequest{RequestId: o.id(), Database: database, Name: table, Partition: partition, IfNotExists: o.ifNotExists}
	var resp *pb.CommandResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.CreatePartition(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	o.report(resp)
	p := partitionFromPB(resp.GetResult().GetPartition())
	return &p, nil
}

// DropPartition drops a partition with its data, local and remote.
// IfExists makes a missing one no error.
func (a *Admin) DropPartition(ctx context.Context, database, table, partition string, opts ...Option) error {
	o := collect(opts)
	req := &pb.DropPartitionRequest{RequestId: o.id(), Database: database, Name: table, Partition: partition, IfExists: o.ifExists}
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		resp, err := m.DropPartition(ctx, req)
		o.report(resp)
		return err
	})
}

// ListPartitions lists a partitioned table's partitions by name, with the
// state of their buckets.
func (a *Admin) ListPartitions(ctx context.Context, database, table string) ([]PartitionInfo, error) {
	var resp *pb.ListPartitionsResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ListPartitions(ctx, &pb.ListPartitionsRequest{Database: database, Name: table})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]PartitionInfo, 0, len(resp.Partitions))
	for _, s := range resp.Partitions {
		p := partitionFromPB(s.GetPartition())
		p.Buckets, p.InSync, p.Offline, p.RemoteBytes = s.GetBuckets(), s.GetInSync(), s.GetOffline(), s.GetRemoteBytes()
		out = append(out, p)
	}
	return out, nil
}

// specOfRecord is the partitioning of a table record.
func specOfRecord(rec *pb.TableRecord) (partition.Spec, error) {
	if len(rec.GetPartitionKeys()) == 0 {
		return partition.Spec{}, nil
	}
	cols := rec.GetSchemas()[len(rec.GetSchemas())-1].GetColumns()
	columns := make([]partition.Column, len(cols))
	for i, c := range cols {
		columns[i] = partition.Column{Name: c.GetName(), Type: c.GetType(), Nullable: c.GetNullable()}
	}
	spec, err := partition.NewSpec(columns, rec.GetPrimaryKey(), rec.GetPartitionKeys())
	if err != nil {
		return partition.Spec{}, fmt.Errorf("partition columns (%s): %w", strings.Join(rec.GetPartitionKeys(), ", "), err)
	}
	return spec, nil
}

// PartitionFilter reads partition filters (floe consume --partition):
// each term is conditions joined by "/" or ",", each key OP value with OP
// one of = != > >= < <=, such as "dt=2026-12-03" or "dt>=2026-12-01"; a
// bare value means = on a table with one partition column. A partition
// passes when it meets every condition of any term; no terms pass every
// partition. Integer columns compare as numbers, the others as text (ISO
// dates and the auto-partitioning formats sort in time order).
func (t *Table) PartitionFilter(terms []string) (func(PartitionInfo) bool, error) {
	f, err := t.spec.ParseFilter(terms)
	if err != nil {
		return nil, pkgerr.Errorf("client", "table %s: %w", t.qualifiedName(), err)
	}
	spec := t.spec
	return func(p PartitionInfo) bool { return f.Match(spec, p.Values) }, nil
}
