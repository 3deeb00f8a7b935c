package broker

// A failed log dir, as Kafka has them: when a write to the data directory
// fails (a full disk, an I/O error), the log dir is offline. While it is,
// every produce is answered KAFKA_STORAGE_ERROR at once, without trying a
// write that would fail again and log again; /readyz answers 503 naming
// the failure, gregor_offline_log_dirs is 1 and DescribeLogDirs answers
// the dir with KAFKA_STORAGE_ERROR. Reads go on: on a full disk every
// acknowledged record is intact, and consumers draining it are what frees
// the space (Kafka stops serving the dir's partitions too; a single Kafka
// broker whose only log dir fails shuts down).
//
// Unlike Kafka, which needs a restart, the dir comes back by itself: a
// probe writes and fsyncs a file of logDirProbeBytes in __meta every
// logDirProbeInterval and, once that succeeds, produces are tried again.
// A write that fails after that takes the dir offline again. A failed
// fsync stays sticky in its partition's log (storage), as in Kafka: that
// partition needs a restart whatever the probe says.
//
// In a cluster the broker says so in its registration
// (Cluster.SetLogDirOffline) and the controller treats it as a dead
// broker for leadership and the ISR, as Kafka's controller does with a
// broker's offline log dirs: the partitions it led get new leaders among
// the other replicas of the ISR and producers go on writing there. Back
// online, it says so again and catches up as a follower. A follower's
// failed append takes the dir offline too.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/storage"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	// logDirProbeInterval is how often an offline log dir is probed.
	logDirProbeInterval = time.Second
	// logDirProbeBytes is what the probe writes: room for a few batches,
	// so that the dir does not flap online at the last free block.
	logDirProbeBytes = 1 << 20
)

// testIOFaults, set by the package's tests, routes the logs' I/O through
// Broker.ioFault (storage.Config.BeforeIO); off, production pays nothing.
var testIOFaults bool

// injectedIOError is the error a test's ioFault gives op on path, or nil.
func (b *Broker) injectedIOError(op, path string) error {
	if f := b.logDir.ioFault.Load(); f != nil {
		return (*f)(op, path)
	}
	return nil
}

// logDirFailure is why the log dir is offline.
type logDirFailure struct {
	err   error
	since time.Time
}

// logDirState is the broker's one log dir's health.
type logDirState struct {
	failed atomic.Pointer[logDirFailure] // nil: online
	// announceMu orders telling the cluster: each call reads the state
	// then, so the last one to run tells the latest.
	announceMu sync.Mutex
	// ioFault, set by tests (testIOFaults), fails writes as a full disk
	// would, the probe's too.
	ioFault atomic.Pointer[func(op, path string) error]
}

var descOfflineDirs = prometheus.NewDesc("gregor_offline_log_dirs", "Log dirs offline after a failed write (Kafka's OfflineLogDirectoryCount); produces to them answer KAFKA_STORAGE_ERROR until a probe write succeeds.", nil, nil)

// LogDirError returns why the data directory is offline (a write failed:
// a full disk, an I/O error), or nil when it is online.
func (b *Broker) LogDirError() error {
	if f := b.logDir.failed.Load(); f != nil {
		return f.err
	}
	return nil
}

// noteWriteError takes the log dir offline after err, a failed append,
// when it is an I/O error; the first failure logs and starts the probe.
func (b *Broker) noteWriteError(err error) {
	var se *storage.StorageError
	if !errors.As(err, &se) {
		return
	}
	f := &logDirFailure{err: err, since: time.Now()}
	if !b.logDir.failed.CompareAndSwap(nil, f) {
		return
	}
	b.log.Error("log dir offline: a write failed; produces answer KAFKA_STORAGE_ERROR until a probe write succeeds", "dir", b.cfg.DataDir, "err", err)
	b.bg.Add(1)
	go b.probeLogDir(f)
}

// probeLogDir brings the log dir back online once a probe write succeeds,
// telling the cluster both ways. Only this goroutine clears f: a later
// failure is noted after it has, and starts a probe of its own.
func (b *Broker) probeLogDir(f *logDirFailure) {
	defer b.bg.Done()
	t := time.NewTicker(logDirProbeInterval)
	defer t.Stop()
	tick := func() bool {
		select {
		case <-b.ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	told := b.announceLogDir()
	for {
		if !tick() {
			return
		}
		if !told {
			told = b.announceLogDir()
		}
		if b.injectedIOError("write", "probe") == nil &&
			probeWrite(filepath.Join(b.cfg.DataDir, metaDirName, ".probe"), logDirProbeBytes) == nil {
			break
		}
	}
	b.logDir.failed.CompareAndSwap(f, nil)
	b.log.Info("log dir back online: a probe write succeeded", "dir", b.cfg.DataDir, "offline_for", time.Since(f.since).Round(time.Millisecond))
	for !b.announceLogDir() {
		if !tick() {
			return
		}
	}
}

// announceLogDir tells the cluster whether the log dir is offline now; it
// reports whether that worked (always on a single node).
func (b *Broker) announceLogDir() bool {
	if b.cluster == nil {
		return true
	}
	b.logDir.announceMu.Lock()
	defer b.logDir.announceMu.Unlock()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := b.cluster.node.SetLogDirOffline(ctx, b.LogDirError() != nil); err != nil {
		b.log.Warn("telling the cluster about the log dir", "offline", b.LogDirError() != nil, "err", err)
		return false
	}
	return true
}

// probeWrite writes n bytes to path, fsyncs them and removes the file.
func probeWrite(path string, n int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	_, err = f.Write(make([]byte, n))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
