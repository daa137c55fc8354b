package client

import (
	"context"
	"errors"
	"sync"

	"github.com/floedb/floe/internal/partition"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
)

// partitionLookups routes the keys of a partitioned table's lookuper to
// lookupers of their partitions: a key names its partition (partition
// columns are key columns), and a key of a partition that does not exist
// has no row.
type partitionLookups struct {
	spec partition.Spec // over the primary-key schema's columns

	mu    sync.Mutex
	byID  map[uint64]*Lookuper
	names sync.Pool // of *[]byte
}

// newPartitionLookups resolves the table's partition columns in its
// primary-key schema.
func newPartitionLookups(t *Table, keySchema record.Schema) (*partitionLookups, error) {
	columns := make([]partition.Column, len(keySchema.Columns))
	for i, c := range keySchema.Columns {
		columns[i] = partition.Column{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable}
	}
	spec, err := partition.NewSpec(columns, nil, t.spec.Names())
	if err != nil {
		return nil, pkgerr.Errorf("client", "table %s: partition columns of the primary key: %w", t.qualifiedName(), err)
	}
	pl := &partitionLookups{spec: spec, byID: map[uint64]*Lookuper{}}
	pl.names.New = func() any { return new([]byte) }
	return pl, nil
}

// lookuperOf returns the lookuper of a valid key's partition; nil when
// the partition does not exist.
func (l *Lookuper) lookuperOf(ctx context.Context, key []byte) (*Lookuper, error) {
	pl := l.parts
	scratch := pl.names.Get().(*[]byte)
	defer pl.names.Put(scratch)
	name, err := partition.AppendName(pl.spec, (*scratch)[:0], record.NewRowView(l.keys.keySchema, key))
	if err != nil {
		return nil, pkgerr.Errorf("client", "table %s: %w", l.t.qualifiedName(), err)
	}
	*scratch = name
	pt, err := l.t.partition(ctx, string(name), false)
	if errors.Is(err, ErrUnknownPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if child := pl.byID[pt.info.ID]; child != nil {
		return child, nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrLookuperClosed
	}
	child, err := pt.NewLookuper(l.opts)
	if err != nil {
		return nil, err
	}
	pl.byID[pt.info.ID] = child
	return child, nil
}

// lookupPartitioned is lookupValid of a partitioned table's key.
func (l *Lookuper) lookupPartitioned(ctx context.Context, key []byte) ([]byte, bool, error) {
	for again := true; ; again = false {
		child, err := l.lookuperOf(ctx, key)
		if err != nil || child == nil {
			return nil, false, err
		}
		row, found, err := child.lookupValid(ctx, key)
		if again && l.partitionDropped(child, err) {
			continue
		}
		return row, found, err
	}
}

// partitionDropped reports whether err says the nodes no longer know the
// id of child's partition (it was dropped since its handle was loaded),
// and then has the table's handle forget the partition's, so that the
// key's partition is loaded again: gone (no row) or made again under a new
// id. Without it the handle's lookups fail the same way for ever.
func (l *Lookuper) partitionDropped(child *Lookuper, err error) bool {
	if !errors.Is(err, transport.ErrUnknownTable) {
		return false
	}
	l.t.forgetPartition(child.t)
	return true
}

// lookupBatchPartitioned is LookupBatch of a partitioned table's valid
// keys: one LookupBatch per partition.
func (l *Lookuper) lookupBatchPartitioned(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return l.lookupBatchIn(ctx, keys, true)
}

// lookupBatchIn is lookupBatchPartitioned; with again, the keys of a
// partition found dropped are looked up once more (partitionDropped).
func (l *Lookuper) lookupBatchIn(ctx context.Context, keys [][]byte, again bool) ([][]byte, error) {
	byChild := map[*Lookuper][]int{}
	for i, key := range keys {
		child, err := l.lookuperOf(ctx, key)
		if err != nil {
			return nil, pkgerr.Errorf("client", "lookup batch: key %d: %w", i, err)
		}
		if child != nil {
			byChild[child] = append(byChild[child], i)
		}
	}
	out := make([][]byte, len(keys))
	for child, indexes := range byChild {
		sub := make([][]byte, len(indexes))
		for j, i := range indexes {
			sub[j] = keys[i]
		}
		rows, err := child.LookupBatch(ctx, sub)
		if again && l.partitionDropped(child, err) {
			rows, err = l.lookupBatchIn(ctx, sub, false)
		}
		if err != nil {
			return nil, err
		}
		for j, i := range indexes {
			out[i] = rows[j]
		}
	}
	return out, nil
}

// closeChildren closes the partitions' lookupers.
func (pl *partitionLookups) closeChildren() {
	pl.mu.Lock()
	children := make([]*Lookuper, 0, len(pl.byID))
	for _, c := range pl.byID {
		children = append(children, c)
	}
	pl.mu.Unlock()
	for _, c := range children {
		_ = c.Close()
	}
}
