package logstore

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// SyncPolicy says when appended data is fsynced.
type SyncPolicy int

const (
	// SyncAlways fsyncs before an append returns, grouping concurrent
	// appends under one fsync. The default.
	SyncAlways SyncPolicy = iota
	// SyncInterval fsyncs every Config.SyncInterval.
	SyncInterval
	// SyncNever fsyncs only on segment roll and Close.
	SyncNever
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	default:
		return fmt.Sprintf("SyncPolicy(%d)", int(p))
	}
}

// ParseSyncPolicy reads a policy name: always, interval or never.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "", "always":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	case "never":
		return SyncNever, nil
	default:
		return 0, pkgerr.Errorf("logstore", "unknown sync policy %q (want always, interval or never)", s)
	}
}

// Defaults for the zero Config.
const (
	DefaultSegmentMaxBytes       = 1 << 30
	DefaultPreallocateBytes      = 32 << 20
	DefaultIndexIntervalBytes    = 4 << 10
	DefaultMaxBatchBytes         = 8 << 20
	DefaultSyncInterval          = time.Second
	DefaultRecoveryPointInterval = 10 * time.Second
	DefaultRetentionCheck        = 30 * time.Second

	maxSegmentBytes = math.MaxInt32
)

// Config configures a Log. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// Dir is the log's folder, created if missing. Required.
	Dir string
	// SegmentMaxBytes rolls the active segment when the next batch would
	// pass it. Default 1 GiB, at most 2 GiB - 1.
	SegmentMaxBytes int64
	// SegmentMaxAge rolls the active segment once its first batch is this
	// old, at the next append or in the background, whichever comes first.
	// Zero: no age-based roll.
	SegmentMaxAge time.Duration
	// PreallocateBytes is the largest chunk by which segment files grow
	// ahead of the write position: the first chunk is 64 KiB and each next
	// one as large as the file, up to this. Default 32 MiB.
	PreallocateBytes int64
	// IndexIntervalBytes is the spacing of sparse index entries. Default 4 KiB.
	IndexIntervalBytes int
	// MaxBatchBytes refuses larger batches. Default 8 MiB.
	MaxBatchBytes int
	// Sync is the fsync policy. Default SyncAlways.
	Sync SyncPolicy
	// SyncInterval is, under SyncInterval, how long after a write the
	// fsync covering it comes. Default 1 s.
	SyncInterval time.Duration
	// RecoveryPointInterval is how long after the durable position moves
	// the recovery point is checkpointed. Default 10 s: after a crash,
	// recovery CRC-checks what the log wrote since, and each checkpoint of
	// each busy log is a file written and renamed, which a node with
	// hundreds of busy buckets pays in file-system journal time on every
	// write.
	RecoveryPointInterval time.Duration
	// RetentionBytes deletes the oldest sealed segments while the log is
	// larger than this. Zero or negative: no size limit.
	RetentionBytes int64
	// RetentionAge deletes sealed segments whose newest batch is older than
	// this. Zero: no age limit.
	RetentionAge time.Duration
	// LocalRetentionSegments and LocalRetentionAge delete the local copy
	// of sealed segments that are in remote storage (wholly below the
	// RetentionBounds.RemoteEnd the owner sets): a remote segment goes once
	// LocalRetentionSegments newer sealed segments are local, or once its
	// newest batch is LocalRetentionAge old. Zero: no limit of that kind
	// (both zero: remote segments stay local too).
	LocalRetentionSegments int
	LocalRetentionAge      time.Duration
	// RetentionCheckInterval is the longest retention waits, once a write
	// may have taken the log over RetentionBytes or a sealed segment passed
	// RetentionAge, before it runs in the background. Default 30 s;
	// EnforceRetention runs it at once.
	RetentionCheckInterval time.Duration
	// SkipReadVerify stops the log from checking every batch's CRC before
	// handing it to a reader. By default reads verify, so a bit flip on disk
	// surfaces as ErrCorrupt instead of being served; the check costs one
	// CRC-32C pass (well over 10 GB/s) over the bytes read.
	SkipReadVerify bool
	// Logger receives the log's messages; nil discards them.
	Logger *slog.Logger
	// Now is the clock used for commit timestamps and age checks; nil is
	// time.Now.
	Now func() time.Time
	// Scheduler runs the log's background work and bounds its open
	// segment files, shared by the logs of a node; nil: the log makes one
	// of its own (fine for a tool or a test, not for thousands of logs).
	Scheduler *Scheduler

	// FsyncFault, when set, runs before every segment fsync and a non-nil
	// result stands for the fsync failing (the fsync is then not made):
	// tests, here and in the packages above, inject disk errors through
	// it. Nil in production.
	FsyncFault func(segmentBase int64) error
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return pkgerr.Errorf("logstore", "config: Dir is required")
	case c.SegmentMaxBytes < 0 || c.SegmentMaxBytes > maxSegmentBytes:
		return pkgerr.Errorf("logstore", "config: SegmentMaxBytes %d not in [0, %d]", c.SegmentMaxBytes, maxSegmentBytes)
	case c.SegmentMaxBytes > 0 && c.SegmentMaxBytes < 64<<10:
		return pkgerr.Errorf("logstore", "config: SegmentMaxBytes %d below 64 KiB", c.SegmentMaxBytes)
	case c.PreallocateBytes < 0, c.IndexIntervalBytes < 0, c.MaxBatchBytes < 0,
		c.SyncInterval < 0, c.RecoveryPointInterval < 0, c.SegmentMaxAge < 0,
		c.RetentionAge < 0, c.RetentionCheckInterval < 0, c.LocalRetentionSegments < 0, c.LocalRetentionAge < 0:
		return pkgerr.Errorf("logstore", "config: negative size or duration")
	case c.Sync < SyncAlways || c.Sync > SyncNever:
		return pkgerr.Errorf("logstore", "config: unknown sync policy %d", c.Sync)
	}
	if c.MaxBatchBytes > 0 && int64(c.MaxBatchBytes) > c.withDefaults().SegmentMaxBytes {
		return pkgerr.Errorf("logstore", "config: MaxBatchBytes %d exceeds the segment size", c.MaxBatchBytes)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.SegmentMaxBytes == 0 {
		c.SegmentMaxBytes = DefaultSegmentMaxBytes
	}
	if c.PreallocateBytes == 0 {
		c.PreallocateBytes = DefaultPreallocateBytes
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = min(DefaultMaxBatchBytes, int(c.SegmentMaxBytes))
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.RecoveryPointInterval == 0 {
		c.RecoveryPointInterval = DefaultRecoveryPointInterval
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = DefaultRetentionCheck
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
