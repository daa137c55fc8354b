package metastate

import (
	"encoding/binary"
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
)

// formatVersion is the layout version stored under meta/format. A file with
// another version is refused rather than misread.
const formatVersion = 1

// Top-level buckets; the package doc describes their keys and values.
var (
	bucketMeta         = []byte("meta")
	bucketNodes        = []byte("nodes")
	bucketDatabases    = []byte("databases")
	bucketTables       = []byte("tables")
	bucketBuckets      = []byte("buckets")
	bucketRequests     = []byte("requests")
	bucketRequestOrder = []byte("request_order")

	bucketUsers = []byte("users")
	bucketACLs  = []byte("acls")
	// bucketPartitions: table id, big-endian, then partition name →
	// PartitionRecord.
	bucketPartitions = []byte("partitions")

	allBuckets = [][]byte{bucketMeta, bucketNodes, bucketDatabases, bucketTables,
		bucketBuckets, bucketRequests, bucketRequestOrder}
	// addedBuckets came after the first files were written: a file without
	// them gets them, empty, when it is opened.
	addedBuckets = [][]byte{bucketUsers, bucketACLs, bucketPartitions}
)

// Keys of the meta bucket.
var (
	keyFormat         = []byte("format")
	keyAppliedIndex   = []byte("applied_index")
	keyClusterID      = []byte("cluster_id")
	keyLastDatabaseID = []byte("last_database_id")
	keyLastTableID    = []byte("last_table_id")
	keyLastWriterID   = []byte("last_writer_id")
	keyRequestCount   = []byte("request_count")
)

// appendFillPercent is how full bbolt fills the pages of keys appended in
// order; a little room is left for records that grow in place (epochs).
const appendFillPercent = 0.9

// marshal encodes records deterministically (map fields sorted), so every
// replica writes the same bytes for the same command.
var marshal = proto.MarshalOptions{Deterministic: true}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// nodeKey is a node id, big-endian: keys sort by id.
func nodeKey(id uint32) []byte { return binary.BigEndian.AppendUint32(nil, id) }

// tablePrefix is the key prefix of a database's tables.
func tablePrefix(databaseID uint64) []byte { return u64(databaseID) }

// tableKey is the database id, big-endian, then the table name.
func tableKey(databaseID uint64, name string) []byte {
	return append(tablePrefix(databaseID), name...)
}

// bucketPrefix is the key prefix of a table's buckets.
func bucketPrefix(tableID uint64) []byte { return u64(tableID) }

// bucketKey is the table id then the bucket number, both big-endian.
func bucketKey(tableID uint64, bucket int32) []byte {
	return binary.BigEndian.AppendUint32(bucketPrefix(tableID), uint32(bucket))
}

// sortableMs maps a signed millisecond time to an unsigned one that sorts
// the same way as bytes (a zero time.Time is far below zero).
func sortableMs(ms int64) uint64 { return uint64(ms) ^ (1 << 63) }

func fromSortableMs(v uint64) int64 { return int64(v ^ (1 << 63)) }

// getU64 reads a big-endian counter; a missing key is 0.
func getU64(b *bolt.Bucket, key []byte) (uint64, error) {
	v := b.Get(key)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s is %d bytes", ErrCorrupt, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func putU64(b *bolt.Bucket, key []byte, v uint64) error { return b.Put(key, u64(v)) }

// getRecord decodes the record under key into m; false when there is none.
func getRecord(b *bolt.Bucket, key []byte, m proto.Message) (bool, error) {
	v := b.Get(key)
	if v == nil {
		return false, nil
	}
	if err := proto.Unmarshal(v, m); err != nil {
		return false, corruptRecord(key, err)
	}
	return true, nil
}

// corruptRecord is the error of a stored record that does not decode.
func corruptRecord(key []byte, err error) error {
	return fmt.Errorf("%w: record under key %x: %v", ErrCorrupt, key, err)
}

func putRecord(b *bolt.Bucket, key []byte, m proto.Message) error {
	v, err := marshal.Marshal(m)
	if err != nil {
		return pkgerr.Errorf("metastate", "encode: %w", err)
	}
	return b.Put(key, v)
}
