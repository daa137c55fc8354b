// Package tableprop is the one registry of table properties: each property's
// name, values, default, the tables it applies to and what it does. The
// metadata state machine checks a new table's properties with Parse (so a
// table is refused at create, never stored with a property no node can
// use), and the replicas read them with the same Parse, so the two can
// never disagree on what a property means.
//
// Parse is pure and deterministic: the properties are checked in name
// order, so every metadata replica refuses a bad table with the same error.
// What Parse accepts is part of the metadata state machine's rules: a
// change that accepts or refuses more (a new property, a wider range) must
// come with a new metastate.CreateTableChecks version under which it
// applies, so that a replayed log gives the state it gave.
//
// Each property also says whether ALTER TABLE may change it on a live
// table (Property.Mutable) and, if not, why (Property.Immutable): a
// property that decides what the stored rows mean (the merge engine) is
// fixed at create; one that decides what happens next (retention, the
// format of new batches) is not.
package tableprop

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// Property names.
const (
	MinInsyncReplicas = "min.insync.replicas"
	MergeEngine       = "merge-engine"
	VersionColumn     = "merge-engine.version-column"
	ChangelogImage    = "changelog.image"
	DeleteBehavior    = "delete.behavior"

	LogSegmentBytes    = "log.segment.bytes"
	LogTTL             = "log.ttl"
	LogLocalSegments   = "log.local.segments"
	LogLocalTTL        = "log.local.ttl"
	KVSnapshotInterval = "kv.snapshot.interval"
	KVSnapshotRetained = "kv.snapshot.retained"

	LogFormat           = "log.format"
	LogCompression      = "log.compression"
	LogCompressionLevel = "log.compression.level"

	AutoPartitionTimeUnit     = "auto-partition.time-unit"
	AutoPartitionNumPrecreate = "auto-partition.num-precreate"
	AutoPartitionNumRetention = "auto-partition.num-retention"
	AutoPartitionTimeZone     = "auto-partition.time-zone"
	PartitionDynamicCreate    = "partition.dynamic-create"

	DataLakeEnabled   = "datalake.enabled"
	DataLakeFormat    = "datalake.format"
	DataLakeFreshness = "datalake.freshness"
	DataLakeRetention = "datalake.retention"
)

// Checks versions (metastate.CreateTableChecks) that introduced properties:
// a table created under an earlier version could not have them.
const (
	checksRegistry = 1 // the registry itself: min.insync.replicas, the merge engine, changelog and delete properties
	checksTiering  = 2 // log retention, segment size, local retention and KV snapshots
	// ChecksNestedTypes is the version from which the metadata state machine
	// accepts columns of the nested types ARRAY, MAP and ROW (metastate
	// validateSchema); it adds no property.
	ChecksNestedTypes = 3
	// ChecksLogFormat (4) adds log.format, log.compression and
	// log.compression.level; a log table created under it is arrow unless
	// it says otherwise, one created before it row.
	ChecksLogFormat = 4
	// ChecksPartitions (5) adds partitioned tables (pb.CreateTable's
	// partition_keys) and their properties: auto-partition.* and
	// partition.dynamic-create.
	ChecksPartitions = 5
	// ChecksLake (6) adds the lake: datalake.enabled, datalake.format,
	// datalake.freshness and datalake.retention.
	ChecksLake = 6
	// LatestChecks is the newest version this registry knows.
	LatestChecks = ChecksLake
)

// Defaults of the tiering properties.
const (
	DefaultLogSegmentBytes    = 256 << 20
	DefaultLogTTL             = 7 * 24 * time.Hour
	DefaultLogLocalSegments   = 2
	DefaultKVSnapshotInterval = 10 * time.Minute
	DefaultKVSnapshotRetained = 2
	// DefaultDataLakeFreshness is how far the lake may lag the log; the
	// retention, how long lake snapshots stay readable.
	DefaultDataLakeFreshness = 3 * time.Minute
	DefaultDataLakeRetention = 7 * 24 * time.Hour
	// DefaultLogCompressionLevel is zstd's own default level.
	DefaultLogCompressionLevel = 3

	minLogSegmentBytes = 64 << 10
	maxLogSegmentBytes = 1 << 30
	minDuration        = time.Second
	maxLocalSegments   = 1 << 20
	maxRetained        = 100
	maxZstdLevel       = 22
	// Forever is the value of log.ttl that keeps a log without an age limit.
	Forever = "forever"
)

// Values of the enumerated properties.
const (
	MergeLastRow   = "last_row"
	MergeFirstRow  = "first_row"
	MergeVersioned = "versioned"

	ImageFull = "full"
	ImageWAL  = "wal"

	DeleteAllow   = "allow"
	DeleteIgnore  = "ignore"
	DeleteDisable = "disable"

	FormatArrow = "arrow"
	FormatRow   = "row"

	CompressionZstd = "zstd"
	CompressionLZ4  = "lz4"
	CompressionNone = "none"

	UnitYear    = "year"
	UnitQuarter = "quarter"
	UnitMonth   = "month"
	UnitDay     = "day"
	UnitHour    = "hour"

	LakeIceberg = "iceberg"
)

// ErrInvalid marks every refusal of Parse (an *Error).
var ErrInvalid = pkgerr.New("tableprop", "invalid table property")

// Error says which property is wrong and why.
type Error struct {
	// Property is the property's name as given.
	Property string
	// Value is the value given ("" for an unknown or missing property).
	Value string
	// Problem says what is wrong, with the accepted values or range.
	Problem string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("property %.64q: %s", e.Property, e.Problem)
	}
	return fmt.Sprintf("property %s=%.64q: %s", e.Property, e.Value, e.Problem)
}

// Unwrap makes every *Error match ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// Property describes one table property.
type Property struct {
	// Name is the key given to `table create --property NAME=VALUE`.
	Name string
	// Values are the accepted values of an enumerated property (matched
	// without regard to case), the default first; nil for other kinds.
	Values []string
	// Range describes the accepted values of a property that is not
	// enumerated.
	Range string
	// Default is the value a table without the property has.
	Default string
	// PrimaryKeyOnly: the property applies to primary-key tables only.
	PrimaryKeyOnly bool
	// PartitionedOnly: the property applies to partitioned tables only.
	PartitionedOnly bool
	// Description says what the property does.
	Description string
	// Since is the create-table checks version that introduced it.
	Since uint32
	// Before is the value of a stored table created before the property
	// existed, when it differs from Default: such a table keeps what it was
	// created with (log.ttl: forever, since it kept every record). Empty:
	// Default.
	Before string
	// Mutable: ALTER TABLE may set or reset the property on a live table;
	// the replicas apply the new value without a restart.
	Mutable bool
	// Immutable says, for a property that is not Mutable, why it cannot
	// change once the table holds data: the reason ALTER TABLE refuses it
	// with.
	Immutable string
}

// Lookup returns the property of a name known to the given checks version
// (0: LatestChecks).
func Lookup(name string, checks uint32) (Property, bool) {
	if checks == 0 {
		checks = LatestChecks
	}
	p, ok := lookup(name)
	if !ok || p.Since > checks {
		return Property{}, false
	}
	p.Values = slices.Clone(p.Values)
	return p, true
}

// Accepts describes the accepted values, as error messages and docs/types.md
// show them.
func (p Property) Accepts() string {
	if p.Values != nil {
		return strings.Join(p.Values, "|")
	}
	return p.Range
}

// properties is the registry, sorted by name. It is never modified;
// Properties hands out copies.
var properties = []Property{
	{Name: AutoPartitionNumPrecreate, Range: "0 to 1000", Default: "2", PartitionedOnly: true, Since: ChecksPartitions, Mutable: true,
		Description: "with auto-partition.time-unit: partitions created ahead of time, the current one included"},
	{Name: AutoPartitionNumRetention, Range: "0 to 100000 (0: keep every partition)", Default: "7", PartitionedOnly: true, Since: ChecksPartitions, Mutable: true,
		Description: "with auto-partition.time-unit: partitions kept before the current one; older ones are dropped with their data"},
	{Name: AutoPartitionTimeUnit, Values: []string{UnitYear, UnitQuarter, UnitMonth, UnitDay, UnitHour}, Default: "none", PartitionedOnly: true, Since: ChecksPartitions,
		Description: "the controller creates and drops partitions by time: values 2026 (year), 2026-Q4, 2026-12, 2026-12-03 (day), 2026-12-03T17 (hour); one partition column, STRING (or DATE with day)",
		Immutable:   "the existing partitions' values are periods of the unit; another unit would neither find nor drop them"},
	{Name: AutoPartitionTimeZone, Range: "an IANA time zone (UTC, Europe/Berlin, America/New_York)", Default: "UTC", PartitionedOnly: true, Since: ChecksPartitions,
		Description: "the zone whose calendar auto-partitioning cuts periods in",
		Immutable:   "the existing partitions were cut in this zone's calendar; another zone would shift every period"},
	{Name: ChangelogImage, Values: []string{ImageFull, ImageWAL}, Default: ImageFull, PrimaryKeyOnly: true, Since: checksRegistry,
		Description: "wal writes no -U before each +U",
		Immutable:   "readers of the changelog (consumers, the lake) are built for one image; a log with both would hand them -U records only up to some offset"},
	{Name: DataLakeEnabled, Values: []string{"false", "true"}, Default: "false", Since: ChecksLake, Mutable: true,
		Description: "the cluster tiers the table into an Apache Iceberg table in remote storage, which engines read by path and Floe's readers join to the log (docs/lake.md; needs floe serve --remote-*)"},
	{Name: DataLakeFormat, Values: []string{LakeIceberg}, Default: LakeIceberg, Since: ChecksLake,
		Description: "the open table format of the lake",
		Immutable:   "the lake table's files and metadata are in this format; another would start a second lake table"},
	{Name: DataLakeFreshness, Range: "a duration of at least 1s (10s, 3m, 1h)", Default: "3m", Since: ChecksLake, Mutable: true,
		Description: "with datalake.enabled: how far the lake may lag the log; tiering commits at least this often"},
	{Name: DataLakeRetention, Range: "a duration of at least 1s, or forever", Default: "7d", Since: ChecksLake, Mutable: true,
		Description: "with datalake.enabled: lake snapshots older than this expire (the current one never), and data files only they reference are deleted"},
	{Name: DeleteBehavior, Values: []string{DeleteAllow, DeleteIgnore, DeleteDisable}, Default: DeleteAllow, PrimaryKeyOnly: true, Since: checksRegistry,
		Description: "ignore drops deletes; disable refuses them with an error",
		Immutable:   "it decides which deletes the stored rows and the changelog reflect; changing it would make the same writes give different rows before and after"},
	{Name: KVSnapshotInterval, Range: "a duration of at least 1s (10m, 1h, 1d)", Default: "10m", PrimaryKeyOnly: true, Since: checksTiering, Mutable: true,
		Description: "how often each bucket's rows are snapshotted to remote storage"},
	{Name: KVSnapshotRetained, Range: "1 to 100", Default: "2", PrimaryKeyOnly: true, Since: checksTiering, Mutable: true,
		Description: "committed KV snapshots kept per bucket"},
	{Name: LogCompression, Values: []string{CompressionZstd, CompressionLZ4, CompressionNone}, Default: CompressionZstd, Since: ChecksLogFormat, Mutable: true,
		Description: "the compression of arrow batches (row batches: each writer's own option); every batch says its own, so a change applies to new batches only"},
	{Name: LogCompressionLevel, Range: "1 to 22 (zstd levels; lz4 and none ignore it)", Default: "3", Since: ChecksLogFormat, Mutable: true,
		Description: "the zstd level of log.compression=zstd"},
	{Name: LogFormat, Values: []string{FormatArrow, FormatRow}, Default: "arrow for log tables, row for primary-key tables", Since: ChecksLogFormat,
		Before: FormatRow, Mutable: true,
		Description: "the payload of new log batches; every batch says its own format, so a change applies to new batches only (primary-key tables: row only, their changelogs stay row-based)"},
	{Name: LogLocalSegments, Range: "1 to 1048576", Default: "2", Since: checksTiering, Mutable: true,
		Description: "sealed segments kept on local disk once they are in remote storage"},
	{Name: LogLocalTTL, Range: "a duration of at least 1s", Default: "none", Since: checksTiering, Mutable: true,
		Description: "segments in remote storage older than this leave local disk even within log.local.segments"},
	{Name: LogSegmentBytes, Range: "64KiB to 1GiB (bytes, or with KiB, MiB or GiB)", Default: "256MiB", Since: checksTiering, Mutable: true,
		Description: "a log segment rolls at this size (after a change: from the next segment on)"},
	{Name: LogTTL, Range: "a duration of at least 1s, or forever", Default: "7d", Since: checksTiering, Before: Forever, Mutable: true,
		Description: "records older than this are deleted, locally and remotely (a primary-key table's changelog only below its newest snapshot)"},
	{Name: MergeEngine, Values: []string{MergeLastRow, MergeFirstRow, MergeVersioned}, Default: MergeLastRow, PrimaryKeyOnly: true, Since: checksRegistry,
		Description: "first_row ignores later upserts of a key; versioned keeps the row with the larger version",
		Immutable:   "it decides how stored rows were merged; the rows of another engine would mean something else"},
	{Name: VersionColumn, Range: "a TINYINT, SMALLINT, INT, BIGINT or TIMESTAMP column", PrimaryKeyOnly: true, Since: checksRegistry,
		Description: "the version column of merge-engine=versioned (required by it, refused without it)",
		Immutable:   "the stored rows were merged by this column's order"},
	{Name: MinInsyncReplicas, Range: "1 to the replication factor", Default: "2 with replication 3 or more, else 1", Since: checksRegistry, Mutable: true,
		Description: "in-sync replicas an acks=all write needs"},
	{Name: PartitionDynamicCreate, Values: []string{"true", "false"}, Default: "true without auto-partition.time-unit, else false", PartitionedOnly: true, Since: ChecksPartitions, Mutable: true,
		Description: "a writer that meets a row of a partition that does not exist creates it (false: the row is refused with UNKNOWN_PARTITION)"},
}

// NotProperties are what `table create` sets that is not a property, with
// why ALTER TABLE cannot change it: a request to set one by that name is
// refused with this reason, not as an unknown property.
var NotProperties = map[string]string{
	"buckets":     "the bucket count is not a property: every row's bucket is the hash of its key modulo the count, so changing it would move stored rows",
	"bucket.key":  "the bucket key is not a property: it decides which bucket holds each stored row",
	"primary.key": "the primary key is not a property: the stored rows are keyed by it",
	"replication": "the replication factor is not a property: move replicas with floe table reassign",
}

// Properties returns every table property, sorted by name.
func Properties() []Property {
	out := slices.Clone(properties)
	for i := range out {
		out[i].Values = slices.Clone(out[i].Values)
	}
	return out
}

// Valid lists the properties with their accepted values, for error
// messages: "changelog.image (full|wal), ...".
func Valid() string {
	parts := make([]string, len(properties))
	for i, p := range properties {
		parts[i] = p.Name + " (" + p.Accepts() + ")"
	}
	return strings.Join(parts, ", ")
}

func lookup(name string) (Property, bool) {
	i := slices.IndexFunc(properties, func(p Property) bool { return p.Name == name })
	if i < 0 {
		return Property{}, false
	}
	return properties[i], true
}

// Table is what the meaning and range of the properties depend on.
type Table struct {
	// Replication is the table's replication factor (≥ 1).
	Replication int
	// PrimaryKey: the table is a primary-key table.
	PrimaryKey bool
	// Partitioned: the table has partition columns.
	Partitioned bool
	// Checks is the create-table checks version the properties are read
	// by (metastate.CreateTableChecks, ≥ 1): properties introduced later
	// are unknown to it. Zero: LatestChecks.
	Checks uint32
	// CreatedChecks is, for ParseStored, the create-table checks version
	// the stored table was created under (pb.TableRecord.checks; 0: a
	// record from before log.ttl, which does not say): a property
	// introduced later that the table does not set takes its Before value,
	// not the default of new tables. Parse ignores it.
	CreatedChecks uint32
}

// Values are a table's properties, defaults filled in.
type Values struct {
	MinInsyncReplicas int
	// MergeEngine, ChangelogImage and DeleteBehavior hold one of their
	// lower-case values (primary-key tables only; "" on log tables).
	MergeEngine    string
	ChangelogImage string
	DeleteBehavior string
	// VersionColumn names the version column of the versioned engine.
	VersionColumn string

	// LogSegmentBytes is the size at which a log segment rolls.
	LogSegmentBytes int64
	// LogTTL is the age past which records are deleted; 0: never.
	LogTTL time.Duration
	// LogLocalSegments is how many sealed segments stay local once remote.
	LogLocalSegments int
	// LogLocalTTL is the age past which remote segments leave local disk;
	// 0: no age limit.
	LogLocalTTL time.Duration
	// KVSnapshotInterval and KVSnapshotRetained: primary-key tables only
	// (zero on log tables).
	KVSnapshotInterval time.Duration
	KVSnapshotRetained int

	// LogFormat is the payload format of new log batches: FormatArrow or
	// FormatRow (always FormatRow on primary-key tables).
	LogFormat string
	// LogCompression is CompressionZstd, CompressionLZ4 or CompressionNone;
	// LogCompressionLevel the zstd level (1 to 22), which the others ignore.
	LogCompression      string
	LogCompressionLevel int

	// AutoPartition is the time unit of auto-partitioning, one of the
	// Unit constants; "" when the table is not auto-partitioned.
	AutoPartition string
	// AutoPartitionPrecreate and AutoPartitionRetention are the periods
	// created ahead (the current one included) and kept behind it (0:
	// every one); AutoPartitionZone the zone of the periods' calendar.
	AutoPartitionPrecreate int
	AutoPartitionRetention int
	AutoPartitionZone      *time.Location
	// DynamicCreate: writers create the partitions they meet (partitioned
	// tables only).
	DynamicCreate bool

	// DataLake: the table is tiered into the lake, in DataLakeFormat,
	// committing at least every DataLakeFreshness; lake snapshots older
	// than DataLakeRetention expire (0: never).
	DataLake          bool
	DataLakeFormat    string
	DataLakeFreshness time.Duration
	DataLakeRetention time.Duration
}

// DefaultMinInsyncReplicas is min.insync.replicas of a table that does not
// set it: 2 with 3 replicas or more, so that one lost node keeps acks=all
// writes going while every acknowledged write survives the loss of one
// more; 1 otherwise.
func DefaultMinInsyncReplicas(replication int) int {
	if replication >= 3 {
		return 2
	}
	return 1
}

// Parse checks a new table's properties and returns their values: an
// unknown property, a value out of its range or a property of primary-key
// tables on a log table is an *Error (matching ErrInvalid).
func Parse(props map[string]string, t Table) (Values, error) {
	return parse(props, t, true)
}

// ParseStored reads the properties of a stored table, which a build from
// before this registry may have stored unchecked. It keeps such tables
// working where their meaning is clear: unknown properties (typos kept by
// older builds) and properties of primary-key tables on a log table are
// ignored, and a min.insync.replicas above the replication factor counts as
// the replication factor (every replica, the most it can ask for; before,
// every acks=all write failed). A property the table could not set when
// it was created (Table.CreatedChecks) and does not set keeps the value
// tables had before the property existed (Property.Before): log.ttl is
// forever for a table from before it, 7d only for tables created since. A
// value it cannot read (min.insync.replicas=abc, merge-engine=newest) is
// an *Error: the table is unusable.
func ParseStored(props map[string]string, t Table) (Values, error) {
	return parse(props, t, false)
}

func parse(props map[string]string, t Table, strict bool) (Values, error) {
	v := Values{MinInsyncReplicas: DefaultMinInsyncReplicas(t.Replication),
		LogSegmentBytes: DefaultLogSegmentBytes, LogTTL: DefaultLogTTL, LogLocalSegments: DefaultLogLocalSegments,
		LogFormat: FormatArrow, LogCompression: CompressionZstd, LogCompressionLevel: DefaultLogCompressionLevel,
		DataLakeFormat: LakeIceberg, DataLakeFreshness: DefaultDataLakeFreshness, DataLakeRetention: DefaultDataLakeRetention}
	if t.Partitioned {
		v.AutoPartitionPrecreate, v.AutoPartitionRetention = DefaultAutoPartitionPrecreate, DefaultAutoPartitionRetention
		v.AutoPartitionZone = time.UTC
	}
	if t.PrimaryKey {
		v.LogFormat = FormatRow
		v.MergeEngine, v.ChangelogImage, v.DeleteBehavior = MergeLastRow, ImageFull, DeleteAllow
		v.KVSnapshotInterval, v.KVSnapshotRetained = DefaultKVSnapshotInterval, DefaultKVSnapshotRetained
	}
	checks := t.Checks
	if checks == 0 {
		checks = LatestChecks
	}
	if !strict {
		if err := setBefore(&v, props, t); err != nil {
			return Values{}, err
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad property is the same on every node
	for _, k := range keys {
		val := props[k]
		p, ok := lookup(k)
		ok = ok && p.Since <= checks
		switch {
		case !ok && !strict, p.PrimaryKeyOnly && !t.PrimaryKey && !strict, p.PartitionedOnly && !t.Partitioned && !strict:
			continue
		case !ok:
			return Values{}, &Error{Property: k, Problem: "unknown property"}
		case p.PrimaryKeyOnly && !t.PrimaryKey:
			return Values{}, &Error{Property: k, Value: val, Problem: "applies to primary-key tables only"}
		case p.PartitionedOnly && !t.Partitioned:
			return Values{}, &Error{Property: k, Value: val, Problem: "applies to partitioned tables only (table create --partition-by)"}
		case p.Values != nil:
			lower := strings.ToLower(val)
			if !slices.Contains(p.Values, lower) {
				return Values{}, &Error{Property: k, Value: val, Problem: "want one of " + strings.Join(p.Values, ", ")}
			}
			val = lower
		}
		switch k {
		case MinInsyncReplicas:
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || (strict && n > t.Replication) {
				return Values{}, &Error{Property: k, Value: val,
					Problem: fmt.Sprintf("want an integer from 1 to the replication factor %d", t.Replication)}
			}
			v.MinInsyncReplicas = min(n, t.Replication) // stored: above replication means every replica
		case MergeEngine:
			v.MergeEngine = val
		case ChangelogImage:
			v.ChangelogImage = val
		case DeleteBehavior:
			v.DeleteBehavior = val
		case VersionColumn:
			if val == "" {
				return Values{}, &Error{Property: k, Value: val, Problem: "want a column name"}
			}
			v.VersionColumn = val
		default:
			if err := parseValue(&v, k, val, t); err != nil {
				return Values{}, err
			}
		}
	}
	if t.Partitioned {
		if _, set := props[PartitionDynamicCreate]; !set {
			v.DynamicCreate = v.AutoPartition == ""
		}
	}
	switch {
	case v.MergeEngine == MergeVersioned && v.VersionColumn == "":
		return Values{}, &Error{Property: VersionColumn, Problem: "required by merge-engine=versioned"}
	case v.VersionColumn != "" && v.MergeEngine != MergeVersioned:
		return Values{}, &Error{Property: VersionColumn, Value: v.VersionColumn, Problem: "only for merge-engine=versioned"}
	}
	return v, nil
}

// setBefore gives the properties introduced after t.CreatedChecks, which
// the table could not set when it was created and props does not, their
// Before values.
func setBefore(v *Values, props map[string]string, t Table) error {
	for _, p := range properties {
		_, set := props[p.Name]
		if set || p.Before == "" || p.Since <= t.CreatedChecks || (p.PrimaryKeyOnly && !t.PrimaryKey) {
			continue
		}
		if err := parseValue(v, p.Name, p.Before, t); err != nil {
			return err
		}
	}
	return nil
}
