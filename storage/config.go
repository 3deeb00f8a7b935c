package storage

import (
	"log/slog"
	"math"
	"time"
)

// Config holds the per-log settings, named after Kafka's topic configs. Start
// from DefaultConfig; Open and UpdateConfig replace out-of-range values by the
// defaults as noted on each field.
type Config struct {
	// SegmentBytes is segment.bytes: the active segment is rolled when the
	// next batch would make it larger. <= 0 means the default, 1 GiB; values
	// above 2 GiB-1 are clamped because index positions are 32-bit.
	SegmentBytes int64
	// SegmentMs is segment.ms: the active segment is rolled when its first
	// batch was appended longer ago. <= 0 means the default, 7 days.
	SegmentMs int64
	// IndexIntervalBytes is index.interval.bytes: bytes of log between
	// offset-index entries. 0 indexes every batch; < 0 means the default, 4096.
	IndexIntervalBytes int32
	// RetentionMs is retention.ms: segments whose largest timestamp is older
	// are deleted by ApplyRetention. -1 (any negative) means unlimited.
	RetentionMs int64
	// RetentionBytes is retention.bytes: ApplyRetention deletes the oldest
	// segments while the log is larger. -1 (any negative) means unlimited.
	RetentionBytes int64
	// FlushMessages is flush.messages: Append fsyncs once this many messages
	// have been appended since the last flush. <= 0 means never (MaxInt64).
	FlushMessages int64
	// FlushMs is flush.ms: FlushIfDue flushes when the last flush is older.
	// < 0 means never (MaxInt64).
	FlushMs int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Decompress, when set, decompresses the records of a compressed batch
	// (codec is attributes&7). It is used only to find exact record offsets and
	// timestamps for OffsetForTimestamp and MaxTimestamp; when nil those work
	// at batch granularity for compressed batches.
	Decompress func(codec int8, compressed []byte) ([]byte, error)
	// Logger receives recovery and deletion messages; nil means slog.Default().
	Logger *slog.Logger
	// OwnedFiles are the names of the files the log's owner adds to its
	// directory (AddFile; Kafka's partition.metadata): Delete removes them
	// with the log's own, and nothing else (RemoveLogDir).
	OwnedFiles []string
	// ReplicatedHighWatermark makes the high watermark the owner's to move
	// (a replicated partition's leader or follower): Append, AppendMarker
	// and AppendAsFollower then advance only the log end offset, and
	// SetHighWatermark advances the high watermark. It is persisted in the
	// checkpoint file. It is read by Open and cannot be changed afterwards.
	// False (the default) is the single-broker log: every append advances
	// the high watermark to the log end offset.
	ReplicatedHighWatermark bool
	// BeforeIO is a fault-injection seam for tests: it is called before
	// each write ("write") and fsync ("fsync") of a segment file with the
	// file's path, and a non-nil error fails that operation as if the
	// operating system had returned it; also before TruncateTo cuts a
	// segment file ("truncate"), to interrupt a truncation. Nil in
	// production.
	BeforeIO func(op, path string) error
}

// DefaultSegmentBytes, DefaultSegmentMs, DefaultIndexIntervalBytes and
// DefaultRetentionMs are Kafka's defaults for segment.bytes, segment.ms,
// index.interval.bytes and retention.ms.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = weekMs
	DefaultIndexIntervalBytes = 4096
	DefaultRetentionMs        = weekMs

	weekMs = 7 * 24 * 60 * 60 * 1000 // Kafka's 7-day default, in milliseconds
)

// DefaultConfig returns Kafka's defaults: 1 GiB segments rolled after 7 days,
// an index entry every 4 KiB, 7 days of retention without a size limit, and no
// forced flushes.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentMs:          DefaultSegmentMs,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		RetentionMs:        DefaultRetentionMs,
		RetentionBytes:     -1,
		FlushMessages:      math.MaxInt64,
		FlushMs:            math.MaxInt64,
	}
}

// normalized returns c with out-of-range values replaced as documented.
func (c Config) normalized() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentBytes > math.MaxInt32 {
		c.SegmentBytes = math.MaxInt32
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.RetentionMs < 0 {
		c.RetentionMs = -1
	}
	if c.RetentionBytes < 0 {
		c.RetentionBytes = -1
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = math.MaxInt64
	}
	if c.FlushMs < 0 {
		c.FlushMs = math.MaxInt64
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
