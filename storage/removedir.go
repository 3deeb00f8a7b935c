package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// logFileSuffixes are the suffixes of the offset-named files of a log
// directory (offsetFileName).
var logFileSuffixes = []string{logSuffix, indexSuffix, timeIndexSuffix, snapshotSuffix, txnIndexSuffix}

// logFileNames are the fixed names a Log writes in its directory.
var logFileNames = []string{checkpointName, cleanShutdownName, leaderEpochFileName, cleanerCheckpointName}

// IsLogFile reports whether name is a file a Log writes in its directory
// (segments, indexes, snapshots and checkpoints, and their temporary,
// cleaned, swapped and spare forms), or one of owned, the names its owner
// adds (AddFile).
func IsLogFile(name string, owned ...string) bool {
	for _, s := range []string{tmpSuffix, ".deferred", spareSuffix, cleanedSuffix, swapSuffix} {
		name = strings.TrimSuffix(name, s)
	}
	return IsSegmentFile(name) || slices.Contains(logFileNames, name) || slices.Contains(owned, name)
}

// IsSegmentFile reports whether name is shaped as a segment's file: a
// 20-digit base offset (offsetFileName) and the suffix of a log, an
// index, a time index, a transaction index or a snapshot.
func IsSegmentFile(name string) bool {
	for _, s := range logFileSuffixes {
		if len(name) == offsetNameDigits+len(s) && strings.HasSuffix(name, s) &&
			strings.Trim(name[:offsetNameDigits], "0123456789") == "" {
			return true
		}
	}
	return false
}

// RemoveLogDir removes a log's directory as far as it is the log's: the
// files IsLogFile(name, owned...) recognises, then dir itself when
// nothing else is left in it. Anything else (a file or directory another
// program put there) is kept, with dir, and its names returned.
func RemoveLogDir(dir string, owned ...string) (kept []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioErr("readdir", dir, err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() && IsLogFile(e.Name(), owned...) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, ioErr("remove", p, err)
			}
			continue
		}
		kept = append(kept, e.Name())
	}
	if len(kept) > 0 {
		return kept, nil
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, ioErr("remove", dir, err)
	}
	return nil, nil
}
