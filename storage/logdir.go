package storage

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// A LogDir is a data directory of many logs (one of Kafka's log.dirs): the
// part of Kafka's LogManager that deals with all of them at once, so that
// starting and stopping a broker with thousands of partitions costs a few
// syncs of the file system rather than several fsyncs per partition.
//
//   - Logs opened with OpenLog, and closed with CloseLogs, leave their
//     fsyncs to Sync, which makes everything they wrote durable with
//     syncfs(2) (on Linux; other systems fsync every file and directory
//     under the LogDir instead, sys_other.go). Files they replace atomically (checkpoint, producer
//     snapshot, leader-epoch cache) are written to a temporary name and
//     renamed into place by Sync only after that sync, so that a crash
//     leaves the old file or the new one, never a torn one.
//   - Which logs were closed cleanly is one file, the dir's clean-shutdown
//     list, written by CloseLogs after the sync, instead of a marker (and
//     two fsyncs) per log. OpenLogDir reads it and Sync removes it before
//     anything is appended; a log opened later in the same run that the
//     list names (a cluster node opens partitions as metadata arrives) is
//     still trusted, since nothing has written to it since it was closed.
//     A log's own clean-shutdown marker (Log.Close, or a data directory of
//     an earlier Gregor) is honoured as before.
//
// Until Sync returns after an OpenLog, the log must not be appended to,
// flushed or truncated: its recovery (a truncation, rebuilt indexes) may not
// be durable yet.
type LogDir struct {
	path string

	mu          sync.Mutex
	clean       map[string]bool // logs (directory names) the clean-shutdown list names, until opened
	listPresent bool            // the list file is still on disk: Sync removes it
	foreign     bool            // a file of the list's name is not Gregor's: never written over
	renames     []deferredRename
	pending     atomic.Bool // a deferred write or fsync waits for Sync

	syncMu sync.Mutex // one Sync at a time

	files *fileCache // segments' open files (filecache.go)

	inTheWay atomic.Pointer[func(dir string) error] // SetInTheWay
}

// DefaultMaxOpenFiles is the bound of a LogDir's open segment files when
// none is set (SetMaxOpenFiles): half the process's open-file limit
// (RLIMIT_NOFILE, which Go raises from its soft to its hard value at
// start), leaving the other half to connections, etcd, the coordinators'
// databases and the files being written at any moment; and, where
// vm.max_map_count is known (Linux), at most (max_map_count - 8192) / 2,
// since an open segment other than a log's active one also maps its two
// indexes, leaving 8,192 mappings to the Go runtime, the coordinators'
// bbolt files and etcd. Without either limit it is 65,536; never below 64.
// With ulimit -n 20,000 and the default max_map_count of 65,530 it is
// 10,000.
func DefaultMaxOpenFiles() int {
	files, maps := processLimits()
	n := int64(1 << 16)
	if files > 0 {
		n = files / 2
	}
	if maps > 0 {
		n = min(n, (maps-8192)/2)
	}
	return int(max(n, 64))
}

// deferredRename is an atomic file replacement waiting for Sync.
type deferredRename struct {
	tmp, path string
	keepSpare bool
}

// logDirCleanName is the clean-shutdown list: a header line, then the
// names of the logs (the directories under the LogDir) that CloseLogs
// closed cleanly, one per line:
//
//	gregor clean-shutdown v1\n
//	orders-0\n
//	orders-1\n
//
// It is written after everything they hold is durable and removed by the
// first Sync after OpenLogDir. A file of that name without the header is
// not Gregor's: it is ignored and left alone.
const (
	logDirCleanName   = "clean-shutdown"
	logDirCleanHeader = "gregor clean-shutdown v1\n"
)

// deferredSuffix names the temporary file of a deferred atomic write; it
// ends in tmpSuffix, so an Open removes one left by a crash.
const deferredSuffix = ".deferred" + tmpSuffix

// OpenLogDir returns the LogDir of the directory path (created if missing)
// and reads its clean-shutdown list.
func OpenLogDir(path string) (*LogDir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, ioErr("mkdir", path, err)
	}
	d := &LogDir{path: path, clean: map[string]bool{}, files: &fileCache{}}
	d.files.limit.Store(int64(DefaultMaxOpenFiles()))
	b, err := os.ReadFile(filepath.Join(path, logDirCleanName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, ioErr("read", filepath.Join(path, logDirCleanName), err)
	case !bytes.HasPrefix(b, []byte(logDirCleanHeader)):
		d.foreign = true
	default:
		d.listPresent = true
		sc := bufio.NewScanner(bytes.NewReader(b[len(logDirCleanHeader):]))
		for sc.Scan() {
			if name := strings.TrimSpace(sc.Text()); name != "" && !strings.ContainsRune(name, '/') {
				d.clean[name] = true
			}
		}
	}
	return d, nil
}

// SetMaxOpenFiles bounds the segments whose .log file the LogDir's logs keep
// open (and whose indexes they keep mapped) at n, which applies at once;
// n <= 0 sets DefaultMaxOpenFiles. The bound is exceeded only by files in
// use at the same moment (being read, written, sent by a Slice, cleaned).
func (d *LogDir) SetMaxOpenFiles(n int) {
	if n <= 0 {
		n = DefaultMaxOpenFiles()
	}
	d.files.limit.Store(int64(n))
	d.files.shrink()
}

// SetInTheWay sets what a birth does with a directory found at the path of
// the unborn log it makes (unborn.go), which the log did not make: another
// process's, or left by an earlier log of that name. f returns nil once the
// path is free (the directory set aside) or the directory may be used (it
// is empty), else an error, which the birth returns, leaving the directory
// as it is. Without it a birth uses only an empty directory.
func (d *LogDir) SetInTheWay(f func(dir string) error) {
	d.inTheWay.Store(&f)
}

// FileStats reports the LogDir's open segment files.
func (d *LogDir) FileStats() FileCacheStats { return d.files.stats() }

// Path is the directory.
func (d *LogDir) Path() string { return d.path }

// CleanShutdown reports whether the last CloseLogs left a clean-shutdown
// list that Sync has not yet removed (a broker that stopped cleanly).
func (d *LogDir) CleanShutdown() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.listPresent
}

// OpenLog opens (or creates) the log in the directory name under d, as Open
// does, leaving its fsyncs to Sync; a log the clean-shutdown list names is
// trusted as after a clean shutdown. Call Sync before using it.
func (d *LogDir) OpenLog(name string, cfg Config) (*Log, error) {
	dir, clean, err := d.claim(name)
	if err != nil {
		return nil, err
	}
	return open(dir, cfg, d, clean)
}

// CreateLog is OpenLog of a log whose directory the caller found missing
// a moment ago: an unborn log, made without looking again (a partition
// created among thousands in one CreateTopics request).
func (d *LogDir) CreateLog(name string, cfg Config) (*Log, error) {
	dir, _, err := d.claim(name)
	if err != nil {
		return nil, err
	}
	return newUnbornLog(dir, cfg.normalized(), d), nil
}

// claim checks that name is a directory name under d and takes it off the
// clean-shutdown list, reporting whether it was on it.
func (d *LogDir) claim(name string) (dir string, clean bool, err error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return "", false, ioErr("open", filepath.Join(d.path, name), errors.New("not a directory name under the log dir"))
	}
	d.mu.Lock()
	clean = d.clean[name]
	delete(d.clean, name)
	d.mu.Unlock()
	return filepath.Join(d.path, name), clean, nil
}

// CloseLogs closes logs (opened with OpenLog) as Close does, several at a
// time, leaving their fsyncs to one Sync, and then durably writes the
// clean-shutdown list naming those that closed without error. errs[i] is
// logs[i]'s error (ErrLogClosed for a log closed before); err is an error
// of the sync or of writing the list, after which no log is trusted at the
// next start.
func (d *LogDir) CloseLogs(logs []*Log) (errs []error, err error) {
	errs = make([]error, len(logs))
	Parallel(len(logs), func(i int) {
		l := logs[i]
		if l.ld != d || d.foreign {
			errs[i] = l.Close()
			return
		}
		errs[i] = l.close(true)
	})
	if err := d.Sync(); err != nil {
		return errs, err
	}
	list := []byte(logDirCleanHeader)
	n := 0
	for i, l := range logs {
		if errs[i] == nil && l.ld == d && !d.foreign && !l.unborn.Load() {
			list = append(append(list, filepath.Base(l.dir)...), '\n')
			n++
		}
	}
	if n == 0 {
		return errs, nil
	}
	return errs, WriteFileAtomic(filepath.Join(d.path, logDirCleanName), list)
}

// Sync makes durable what the logs opened or closed through d have written
// since the last Sync: it removes the clean-shutdown list (the first time),
// syncs the file system (syncfs(2); elsewhere every file and directory
// under d, sys_other.go), renames the deferred atomic writes into place
// and syncs again (their directories, where syncfs is not to be had).
func (d *LogDir) Sync() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	d.mu.Lock()
	renames := d.renames
	d.renames = nil
	removeList := d.listPresent
	d.mu.Unlock()
	if !d.pending.Swap(false) && !removeList && len(renames) == 0 {
		return nil // nothing deferred since the last Sync (new logs defer nothing)
	}
	if removeList {
		p := filepath.Join(d.path, logDirCleanName)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ioErr("remove", p, err)
		}
	}
	if err := d.syncFS(); err != nil {
		d.putBack(renames)
		return err
	}
	if removeList {
		d.mu.Lock()
		d.listPresent = false
		d.mu.Unlock()
	}
	if len(renames) == 0 {
		return nil
	}
	for i, r := range renames {
		if err := placeFile(r.tmp, r.path, r.keepSpare); err != nil {
			d.putBack(renames[i:])
			return err
		}
	}
	if err := d.syncEntries(); err != nil {
		d.pending.Store(true)
		return err
	}
	return nil
}

// putBack returns renames not done to the next Sync.
func (d *LogDir) putBack(renames []deferredRename) {
	d.mu.Lock()
	d.renames = append(renames, d.renames...)
	d.mu.Unlock()
	d.pending.Store(true)
}

// writeDeferred writes data to a temporary file beside path, without an
// fsync, and leaves putting it in place to the next Sync (placeFile, which
// keeps the old content as path's spare when keepSpare is set). The
// temporary file reuses an inode where there is one (writeReusing): reuse
// names a file to recycle (the oldest producer snapshot), else path's
// spare is taken.
func (d *LogDir) writeDeferred(path string, data []byte, reuse string, keepSpare bool) error {
	tmp := path + deferredSuffix
	if err := writeReusing(tmp, path, reuse, data); err != nil {
		return err
	}
	d.mu.Lock()
	d.renames = append(d.renames, deferredRename{tmp: tmp, path: path, keepSpare: keepSpare})
	d.mu.Unlock()
	d.pending.Store(true)
	return nil
}

// Parallel calls fn(0) … fn(n-1), a few at a time: as many as there are
// CPUs, at least 8, since opening and closing logs waits on the disk as
// much as it computes (Kafka's num.recovery.threads.per.data.dir).
func Parallel(n int, fn func(i int)) {
	workers := min(n, max(8, 2*runtime.GOMAXPROCS(0)))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				fn(k)
			}
		})
	}
	wg.Wait()
}
