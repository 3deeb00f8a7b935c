package storage

import (
	"errors"
	"fmt"
	"io/fs"
)

var (
	// ErrCorruptBatch is returned when a record batch fails its CRC-32C check or
	// its framing is inconsistent: shorter than a header, or a batchLength that
	// does not match the bytes given. The broker answers CORRUPT_MESSAGE.
	ErrCorruptBatch = errors.New("storage: corrupt record batch")

	// ErrInvalidRecord is returned when a record batch is framed correctly but
	// its content is not acceptable: no records, a lastOffsetDelta that does not
	// match recordCount, a record whose lengths or varints do not fit, more or
	// fewer records than claimed, an unknown compression codec, or an idempotent
	// batch without a sequence number. The broker answers INVALID_RECORD.
	ErrInvalidRecord = errors.New("storage: invalid record")

	// ErrUnsupportedMagic is returned when a batch is not a v2 record batch
	// (magic byte other than 2).
	ErrUnsupportedMagic = errors.New("storage: unsupported record batch magic")

	// ErrOffsetOutOfRange is returned when an offset is below the log start
	// offset or beyond the log end offset (Read), or above the high watermark
	// (DeleteRecordsBefore).
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")

	// ErrOutOfOrderSequence is returned when an idempotent producer's batch
	// does not continue its sequence: a gap or a rewind that is not a retry of
	// one of the last five batches, or a bumped epoch not starting at 0.
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")

	// ErrInvalidProducerEpoch is returned when an idempotent producer's batch
	// carries an epoch older than the one last seen for its producer id: the
	// producer has been fenced.
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")

	// ErrCoordinatorFenced is returned when a transaction marker comes from
	// an older transaction coordinator epoch than the producer's last
	// marker in the log: a coordinator that lost its partition of
	// __transaction_state (Kafka's TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = errors.New("storage: transaction coordinator fenced")

	// ErrOffsetMismatch is returned when AppendAsFollower is given batches
	// that do not start at the log end offset or do not follow each other
	// without a gap (Kafka's UnexpectedAppendOffsetException). Nothing is
	// appended.
	ErrOffsetMismatch = errors.New("storage: batch offsets do not continue the log")

	// ErrLogClosed is returned when an operation is attempted on a Log after
	// Close or Delete.
	ErrLogClosed = errors.New("storage: log is closed")
)

// StorageError is returned when a file operation fails: an I/O error, a full
// disk, or corruption found while serving a request. It wraps the underlying
// error; the broker answers KAFKA_STORAGE_ERROR. After a failed write or fsync
// the Log refuses further appends with the same error (a sticky error): the
// state of the file after a failed fsync cannot be trusted.
type StorageError struct {
	Op   string // what was being done: "write", "fsync", "read", "open", ...
	Path string // the file or directory involved
	Err  error
}

func (e *StorageError) Error() string {
	return fmt.Sprintf("storage: %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *StorageError) Unwrap() error { return e.Err }

// CorruptionError describes data found damaged in a segment file: where, and
// why it was rejected. Recovery logs it before truncating; a read that runs
// into damage returns it wrapped in a *StorageError.
type CorruptionError struct {
	File   string // path of the damaged file
	Pos    int64  // byte position of the first bad batch or entry
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("storage: corruption in %s at position %d: %s", e.File, e.Pos, e.Reason)
}

func ioErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	if pe, ok := err.(*fs.PathError); ok && pe.Path == path {
		err = pe.Err // the path once, not twice
	}
	return &StorageError{Op: op, Path: path, Err: err}
}
