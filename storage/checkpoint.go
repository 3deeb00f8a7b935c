package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Checkpoint file ("checkpoint"): one line of text, replaced atomically
// (write to checkpoint.tmp, fsync, rename, fsync the directory):
//
//	v1 logStartOffset=<int64> recoveryPoint=<int64>\n
//
// logStartOffset is the first offset visible to readers, moved by
// DeleteRecordsBefore and retention. recoveryPoint is an offset below which
// every batch has been fsynced: after a crash, recovery validates only the
// segments from the one containing it. A missing or unreadable checkpoint
// means logStartOffset = base of the first segment and recoveryPoint = 0
// (everything is validated).
//
// Clean-shutdown marker ("clean-shutdown"): an empty file written by Close
// after everything else is durable and removed by Open before the log can be
// appended to. Its presence means the files need no validation.
const (
	checkpointName    = "checkpoint"
	cleanShutdownName = "clean-shutdown"
	checkpointFormat  = "v1 logStartOffset=%d recoveryPoint=%d\n"
)

// readCheckpoint reads the checkpoint file; ok is false when it is missing or
// malformed.
func readCheckpoint(dir string) (logStartOffset, recoveryPoint int64, ok bool, err error) {
	path := filepath.Join(dir, checkpointName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, ioErr("read", path, err)
	}
	if _, err := fmt.Sscanf(string(b), checkpointFormat, &logStartOffset, &recoveryPoint); err != nil ||
		string(b) != fmt.Sprintf(checkpointFormat, logStartOffset, recoveryPoint) || logStartOffset < 0 || recoveryPoint < 0 {
		return 0, 0, false, nil
	}
	return logStartOffset, recoveryPoint, true, nil
}

// writeCheckpointFile replaces the checkpoint file.
func writeCheckpointFile(dir string, logStartOffset, recoveryPoint int64) error {
	return WriteFileAtomic(filepath.Join(dir, checkpointName), fmt.Appendf(nil, checkpointFormat, logStartOffset, recoveryPoint))
}

// WriteFileAtomic replaces the file at path by data durably: it writes
// path+".tmp", fsyncs it, renames it over path and fsyncs the directory, so
// that after a crash path holds either its old content or data, never a mix.
// When a step fails the temporary file is removed (after the rename there is
// none left). The error is a *StorageError naming the step and the file.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ioErr("create", tmp, err)
	}
	op := "write"
	_, err = f.Write(data)
	if err == nil {
		op, err = "fsync", f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err == nil {
		op, err = "rename", os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return ioErr(op, tmp, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs the directory dir so that the entries created, renamed and
// removed in it are durable. The error is a *StorageError.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return ioErr("open", dir, err)
	}
	err = d.Sync()
	d.Close()
	return ioErr("fsync", dir, err)
}
