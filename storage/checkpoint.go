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
	return writeFileAtomic(filepath.Join(dir, checkpointName), fmt.Appendf(nil, checkpointFormat, logStartOffset, recoveryPoint))
}

// writeFileAtomic replaces path by data durably: write path.tmp, fsync,
// rename over path, fsync the directory.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ioErr("create", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return ioErr("write", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return ioErr("fsync", tmp, err)
	}
	if err := f.Close(); err != nil {
		return ioErr("close", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return ioErr("rename", tmp, err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory so that created, renamed and removed entries
// are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return ioErr("open", dir, err)
	}
	err = d.Sync()
	d.Close()
	return ioErr("fsync", dir, err)
}
