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
//	v2 logStartOffset=<int64> recoveryPoint=<int64> highWatermark=<int64>\n
//
// A log in the default mode writes v1, exactly as before replication
// existed; a log with Config.ReplicatedHighWatermark writes v2, whose
// highWatermark is the last high watermark set with SetHighWatermark. Both
// versions are read by every mode (a v1 file has no high watermark).
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
	checkpointFormat2 = "v2 logStartOffset=%d recoveryPoint=%d highWatermark=%d\n"
)

// checkpoint is the content of the checkpoint file; highWatermark is -1 in
// a v1 file.
type checkpoint struct {
	logStartOffset, recoveryPoint, highWatermark int64
}

// readCheckpoint reads the checkpoint file; ok is false when it is missing or
// malformed.
func readCheckpoint(dir string) (logStartOffset, recoveryPoint int64, ok bool, err error) {
	c, ok, err := readCheckpointFile(dir)
	return c.logStartOffset, c.recoveryPoint, ok, err
}

// readCheckpointFile reads either version of the checkpoint file; ok is
// false when it is missing or malformed.
func readCheckpointFile(dir string) (c checkpoint, ok bool, err error) {
	path := filepath.Join(dir, checkpointName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, ioErr("read", path, err)
	}
	c.highWatermark = -1
	s := string(b)
	if _, err := fmt.Sscanf(s, checkpointFormat, &c.logStartOffset, &c.recoveryPoint); err == nil &&
		s == fmt.Sprintf(checkpointFormat, c.logStartOffset, c.recoveryPoint) && c.logStartOffset >= 0 && c.recoveryPoint >= 0 {
		return c, true, nil
	}
	if _, err := fmt.Sscanf(s, checkpointFormat2, &c.logStartOffset, &c.recoveryPoint, &c.highWatermark); err == nil &&
		s == fmt.Sprintf(checkpointFormat2, c.logStartOffset, c.recoveryPoint, c.highWatermark) &&
		c.logStartOffset >= 0 && c.recoveryPoint >= 0 && c.highWatermark >= 0 {
		return c, true, nil
	}
	return checkpoint{highWatermark: -1}, false, nil
}

// encodeCheckpoint is the checkpoint file's content: v1 when
// c.highWatermark is negative, else v2.
func encodeCheckpoint(c checkpoint) []byte {
	if c.highWatermark < 0 {
		return fmt.Appendf(nil, checkpointFormat, c.logStartOffset, c.recoveryPoint)
	}
	return fmt.Appendf(nil, checkpointFormat2, c.logStartOffset, c.recoveryPoint, c.highWatermark)
}

// WriteFileAtomic replaces the file at path by data durably: it writes
// path+".tmp", fsyncs it, renames it over path and fsyncs the directory, so
// that after a crash path holds either its old content or data, never a mix.
// When a step fails the temporary file is removed (after the rename there is
// none left). The error is a *StorageError naming the step and the file.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFilesAtomic([]File{{Path: path, Data: data}})
}

// writeTemp writes data to the file tmp, created or truncated, and fsyncs
// it when sync is set. On an error tmp is removed; the error is a
// *StorageError naming the step.
func writeTemp(tmp string, data []byte, sync bool) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ioErr("create", tmp, err)
	}
	op := "write"
	_, err = f.Write(data)
	if err == nil && sync {
		op, err = "fsync", f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return ioErr(op, tmp, err)
	}
	return nil
}

// File is a file for WriteFilesAtomic: its path and its new content.
type File struct {
	Path string
	Data []byte
}

// WriteFilesAtomic replaces several files as WriteFileAtomic does, with one
// round of fsyncs for all of them: it writes every temporary file, fsyncs
// them several at a time (the file system commits them together), renames
// each over its file and fsyncs each directory once. Each file ends with
// its old content or its new one; when an error is returned some may have
// the new one.
func WriteFilesAtomic(files []File) error {
	errs := make([]error, len(files))
	Parallel(len(files), func(i int) {
		errs[i] = writeTemp(files[i].Path+tmpSuffix, files[i].Data, true)
	})
	if err := errors.Join(errs...); err != nil {
		for _, f := range files {
			_ = os.Remove(f.Path + tmpSuffix)
		}
		return err
	}
	dirs := map[string]bool{}
	for i, f := range files {
		if err := renameFile(f.Path+tmpSuffix, f.Path); err != nil {
			for _, g := range files[i:] {
				_ = os.Remove(g.Path + tmpSuffix)
			}
			return ioErr("rename", f.Path+tmpSuffix, err)
		}
		dirs[filepath.Dir(f.Path)] = true
	}
	for dir := range dirs {
		if err := SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// Replacing small files without inode churn. ext4 does not hand out again
// an inode freed in the last few seconds: it scans past each one, so when a
// broker replaces the checkpoint of thousands of partitions at once (write
// a new file, rename it over the old, which frees the old inode) every new
// file costs a scan of all the inodes just freed, and stopping 10,000
// partitions spent seconds of kernel time there. A replacement therefore
// reuses inodes: the new content is written into the file's spare
// (<name>.spare, the previous content, kept for that), or for a producer
// snapshot into the oldest snapshot renamed, and is then swapped with the
// file (renameat2 RENAME_EXCHANGE: the old content becomes the spare), or
// renamed to its name when there is no file yet. Nothing is freed or
// allocated once the spares exist; a crash leaves the old file or the new
// one, as a rename does. Systems without renameat2 (everything but Linux)
// rename the new file over the old one and keep no spare (sys_other.go).
const spareSuffix = ".spare"

// writeReusing writes data into tmp (truncated first), which it makes
// from an existing inode when it can: reuse if given, else path's spare,
// else a new file.
func writeReusing(tmp, path, reuse string, data []byte) error {
	if reuse == "" {
		reuse = path + spareSuffix
	}
	_ = os.Rename(reuse, tmp) // nothing to reuse: a new file
	return writeTemp(tmp, data, false)
}

// placeByRename puts tmp in place of path with a rename, which replaces
// path atomically (renameFile): no spare is kept. A tmp already gone (a
// later write placed a newer one) is not an error. It is placeFile where
// there is no renameat2 (sys_other.go), and Linux's placeFile after an
// exchange was not to be had. Like placeFile it does not fsync: the
// caller's sync makes the new entry durable.
func placeByRename(tmp, path string) error {
	if err := renameFile(tmp, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ioErr("rename", tmp, err)
	}
	return nil
}
