package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Log is the _schemas topic as the registry uses it: one partition, read
// from the start on every New and appended to conditionally on every write.
//
// The broker implements it over the real topic (cleanup.policy=compact, one
// partition); NewMemoryLog is an implementation for tests.
type Log interface {
	// Append writes one record at the log end if and only if the log end
	// is still expectedEnd (else it returns ErrConflict and writes
	// nothing), and returns the record's offset once it is durable (for a
	// replicated topic: once the high watermark has passed it). A nil
	// value is a tombstone. Any other error means the write may or may not
	// have happened; the registry then re-reads the log before deciding
	// again.
	Append(ctx context.Context, expectedEnd int64, key, value []byte) (int64, error)
	// Read returns the records from offset from (at most a batch of them;
	// an empty slice when from is the log end) and the log end. Offsets
	// removed by compaction are simply absent; records come in offset
	// order. A from below the log start offset reads from the log start.
	Read(ctx context.Context, from int64) (records []Record, end int64, err error)
}

// Record is one record of the _schemas topic.
type Record struct {
	// Offset is the record's offset in the partition.
	Offset int64
	// Key is Confluent's JSON key, such as
	// {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}.
	Key []byte
	// Value is Confluent's JSON value for the key type, or nil for a
	// tombstone.
	Value []byte
}

// ErrConflict is returned by Log.Append when the log end is no longer the
// expected end: another writer appended first.
var ErrConflict = errors.New("schemaregistry: log end moved (conditional append lost)")

// memoryReadBatch is how many records a MemoryLog.Read returns at most, so
// that tests exercise the batched read loop.
const memoryReadBatch = 64

// MemoryLog is an in-memory Log, safe for concurrent use, for tests (the
// registry's and the broker's). It never compacts.
type MemoryLog struct {
	mu      sync.Mutex
	records []Record
}

// NewMemoryLog returns an empty MemoryLog.
func NewMemoryLog() *MemoryLog { return &MemoryLog{} }

// Append implements Log.
func (l *MemoryLog) Append(ctx context.Context, expectedEnd int64, key, value []byte) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	end := int64(len(l.records))
	if expectedEnd != end {
		return 0, fmt.Errorf("%w: expected end %d, log end %d", ErrConflict, expectedEnd, end)
	}
	rec := Record{Offset: end, Key: clone(key)}
	if value != nil {
		rec.Value = clone(value)
	}
	l.records = append(l.records, rec)
	return end, nil
}

// Read implements Log.
func (l *MemoryLog) Read(ctx context.Context, from int64) ([]Record, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	end := int64(len(l.records))
	if from < 0 {
		from = 0
	}
	if from >= end {
		return nil, end, nil
	}
	to := min(from+memoryReadBatch, end)
	out := make([]Record, to-from)
	copy(out, l.records[from:to])
	return out, end, nil
}

// Records returns a copy of every record in the log, for tests that check
// what the registry wrote.
func (l *MemoryLog) Records() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.records...)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
