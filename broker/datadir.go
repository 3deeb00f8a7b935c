package broker

// What may be in the data directory, and what Gregor does with each entry
// at start. Nothing that Gregor did not write is ever deleted:
//
//	__meta, meta.properties, .lock         Gregor's own (meta.go)
//	<topic>-<p>  with partition files       a partition: opened when a topic
//	                                        claims it with the same topic id;
//	                                        otherwise stray (below)
//	<name>.<id>-delete                      a partition being deleted
//	                                        (retireDir): removed
//	<name>.<id>-stray                       a stray partition: kept for
//	                                        log.stray.retention.ms (7 days;
//	                                        -1: until removed by hand), then
//	                                        removed
//	anything else                           left alone
//
// A directory is a partition only if it holds partition files
// (partition.metadata, or a segment such as 00000000000000000000.log): a
// directory named like one that holds anything else (a user's backup-2024,
// another broker's data dir node-1) is not touched, and a topic whose
// partition would need that name is refused rather than written into it.
// A stray partition is one no topic claims (a topic deleted while this
// broker was down, a partition reassigned away) or one whose topic id is
// not the claiming topic's (a topic deleted and created again): as Kafka
// does with stray logs, it is renamed aside and logged, not deleted, so an
// operator can still look at it.

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/storage"
)

const straySuffix = "-stray"

// retiredName matches the names renameAside gives (retireDir, strayDir):
// the partition's name, a dot, a topic-id-length id and the suffix.
var retiredName = regexp.MustCompile(`\.[A-Za-z0-9_-]{22}(-delete|-stray)$`)

// errNotPartitionDir is returned when a partition's directory exists and
// holds something other than partition files.
var errNotPartitionDir = errors.New("directory exists and holds files that are not a partition's; Gregor does not write into it: move it out of the data directory")

// looksLikePartitionName reports whether name has the form <topic>-<p>.
func looksLikePartitionName(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return false
	}
	_, err := strconv.Atoi(name[i+1:])
	return err == nil
}

// isPartitionDir reports whether dir holds partition files.
func isPartitionDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && holdsPartitionFiles(ents)
}

// holdsPartitionFiles reports whether a directory's entries include
// partition files.
func holdsPartitionFiles(ents []os.DirEntry) bool {
	for _, e := range ents {
		if e.Name() == partitionMetaName || storage.IsSegmentFile(e.Name()) {
			return true
		}
	}
	return false
}

// checkPartitionDir returns nil when a partition may be opened in dir: it
// does not exist (absent), is empty, or holds partition files (held).
func checkPartitionDir(dir string) (absent, held bool, err error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return true, false, nil // one look, for the common case of a new partition
	}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, false, nil
	case err != nil:
		return false, false, err
	case holdsPartitionFiles(ents):
		return false, true, nil
	case len(ents) > 0:
		return false, false, fmt.Errorf("%s: %w", dir, errNotPartitionDir)
	}
	return false, false, nil
}

// strayDir renames a partition directory that no topic of this broker
// owns to <name>.<id>-stray and logs it; it is removed once
// log.stray.retention.ms has passed (sweepStray). why says what made it
// stray.
func (b *Broker) strayDir(dir, why string) error {
	stray, err := renameAside(dir, straySuffix)
	if err != nil {
		b.log.Error("renaming a stray partition directory aside", "dir", dir, "err", err)
		return err
	}
	now := time.Now()
	os.Chtimes(stray, now, now) // the retention counts from here
	b.log.Warn("stray partition directory renamed aside, not deleted", "dir", dir, "now", stray, "why", why,
		"kept_for", b.strayRetention())
	return nil
}

// mayHoldDir reports whether the data directory may hold name, a
// partition's directory, without looking: it held it at its last listing,
// a delete could not rename it aside, or it was not listed yet. Otherwise
// a directory of that name can only have appeared since, made by another
// process: a partition never written finds it at its birth
// (dirInTheWay). So a new partition of a single node is created without a
// look at its directory.
func (b *Broker) mayHoldDir(name string) bool {
	b.dataDirNamesMu.Lock()
	defer b.dataDirNamesMu.Unlock()
	return b.dataDirNames == nil || b.dataDirNames[name]
}

// setMayHoldDir records that the data directory may hold name (may) or was
// found without it.
func (b *Broker) setMayHoldDir(name string, may bool) {
	b.dataDirNamesMu.Lock()
	defer b.dataDirNamesMu.Unlock()
	if b.dataDirNames == nil {
		return
	}
	if may {
		b.dataDirNames[name] = true
	} else {
		delete(b.dataDirNames, name)
	}
}

// dirInTheWay is what a partition never written does with a directory
// found where its birth makes its own (storage.LogDir.SetInTheWay): one
// holding partition files is set aside (an earlier topic's, or a copy put
// there while the broker ran), an empty one is used, anything else is left
// as it is and the partition's writes fail with KAFKA_STORAGE_ERROR.
func (b *Broker) dirInTheWay(dir string) error {
	_, held, err := checkPartitionDir(dir)
	if err != nil {
		b.log.Error("a directory is where a partition's own is made; not writing the partition", "dir", dir, "err", err)
		return err
	}
	if held {
		return b.strayDir(dir, "found where a partition never written makes its directory")
	}
	return nil
}

// strayRetention is log.stray.retention.ms; negative keeps strays forever.
func (b *Broker) strayRetention() time.Duration {
	ms := b.cfg.int64Prop("log.stray.retention.ms")
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// sweepStray removes a -stray directory older than log.stray.retention.ms
// and logs the ones it keeps.
func (b *Broker) sweepStray(dir string) {
	keep := b.strayRetention()
	fi, err := os.Stat(dir)
	if err != nil {
		return
	}
	if age := time.Since(fi.ModTime()); keep < 0 || age < keep {
		b.log.Warn("keeping a stray partition directory", "dir", dir, "since", fi.ModTime().UTC().Format(time.RFC3339))
		return
	}
	b.log.Info("removing a stray partition directory past log.stray.retention.ms", "dir", dir)
	b.removeDirAsync(dir)
}

// scanDataDir applies the rules above to every entry of the data directory
// but the partitions that claimed says are this broker's (by directory
// name, with their topic id). It returns an error only for a claimed
// directory that holds another topic's partition. A cluster node
// (clusterNode) scans after newClusterPartition has opened its partitions
// and checked their topic ids, so their directories are not read again,
// and before it has every internal topic's metadata, so the internal
// topics' directories (names starting "__") are left alone.
func (b *Broker) scanDataDir(claimed map[string]uuid, clusterNode bool) error {
	ents, err := os.ReadDir(b.cfg.DataDir)
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	b.dataDirNamesMu.Lock()
	b.dataDirNames = names
	b.dataDirNamesMu.Unlock()
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || name == metaDirName || (clusterNode && strings.HasPrefix(name, "__")) {
			continue
		}
		if _, ok := claimed[name]; ok && clusterNode {
			continue
		}
		dir := filepath.Join(b.cfg.DataDir, name)
		if m := retiredName.FindStringSubmatch(name); m != nil {
			if m[1] == deleteSuffix {
				b.removeDirAsync(dir)
			} else {
				b.sweepStray(dir)
			}
			continue
		}
		if !looksLikePartitionName(name) {
			continue
		}
		want, ok := claimed[name]
		got, idErr := readPartitionMetadata(dir)
		switch {
		case ok && idErr == nil && got == want:
		case ok && idErr != nil:
			// Claimed, its partition.metadata missing or unreadable (a crash
			// right after the partition was created): written again.
			b.log.Info("writing a claimed partition's missing partition.metadata", "dir", dir, "reason", idErr)
			if err := writePartitionMetadata(dir, want); err != nil {
				return fmt.Errorf("partition directory %s: %w", dir, err)
			}
		case !isPartitionDir(dir):
			if !ok {
				b.log.Info("leaving alone a directory that is not a partition", "dir", dir)
			}
		case ok:
			return fmt.Errorf("partition directory %s belongs to another topic id", dir)
		case idErr == nil:
			_ = b.strayDir(dir, "no topic of this broker has topic id "+got.String()) // logged; the directory stays
		default:
			_ = b.strayDir(dir, "no topic of this broker claims it") // logged; the directory stays
		}
	}
	return nil
}

// dataDirOf is the data directory: dataDir (Config.DataDir, --data-dir)
// when given, else the one directory of log.dirs, else log.dir, else
// ./data. Gregor keeps every partition in one directory, so log.dirs
// listing several is refused; a log.dirs that --data-dir overrides is
// logged.
func dataDirOf(dataDir string, props map[string]string, log *slog.Logger) (string, error) {
	name, v := "log.dirs", strings.TrimSpace(props["log.dirs"])
	if v == "" {
		name, v = "log.dir", strings.TrimSpace(props["log.dir"])
	}
	var dirs []string
	for d := range strings.SplitSeq(v, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	switch {
	case len(dirs) > 1:
		return "", fmt.Errorf("%s lists %d directories (%s): Gregor keeps every partition in one data directory; give one, or set it with --data-dir", name, len(dirs), v)
	case len(dirs) == 1 && dataDir == "":
		return dirs[0], nil
	case len(dirs) == 1 && filepath.Clean(dirs[0]) != filepath.Clean(dataDir):
		log.Warn("the data directory is --data-dir's; "+name+" is ignored", "data_dir", dataDir, name, dirs[0])
	case dataDir == "":
		return "./data", nil
	}
	return dataDir, nil
}
