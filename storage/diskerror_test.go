package storage

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestLog_FullDiskFailsAppendThenRecovers injects ENOSPC into segment
// writes: the append fails with a *StorageError and leaves nothing behind,
// reads keep working, and appends succeed again once space returns.
func TestLog_FullDiskFailsAppendThenRecovers(t *testing.T) {
	var full atomic.Bool
	cfg := testConfig()
	cfg.BeforeIO = func(op, path string) error {
		if op == "write" && full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, cfg)
	defer l.Close()
	first := simpleBatch(2, 10, 1)
	mustAppend(t, l, first)
	full.Store(true)
	_, err := l.Append(simpleBatch(1, 10, 1), AppendOptions{LogAppendTime: -1})
	var se *StorageError
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if l.LogEndOffset() != 2 || l.HighWatermark() != 2 || l.Size() != int64(len(first)) {
		t.Fatalf("after the failed append: leo %d hw %d size %d", l.LogEndOffset(), l.HighWatermark(), l.Size())
	}
	if got := readLog(t, l); len(got) != 1 {
		t.Fatalf("reads during the outage: %d batches", len(got))
	}
	full.Store(false)
	if res := mustAppend(t, l, simpleBatch(1, 10, 1)); res.BaseOffset != 2 {
		t.Fatalf("append after space returned at %d, want 2", res.BaseOffset)
	}
}

// TestLog_FsyncErrorIsSticky: after a failed fsync the page cache can no
// longer be trusted, so the log refuses appends until reopened.
func TestLog_FsyncErrorIsSticky(t *testing.T) {
	cfg := testConfig()
	cfg.FlushMessages = 1
	cfg.BeforeIO = func(op, path string) error {
		if op == "fsync" {
			return syscall.EIO
		}
		return nil
	}
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Delete()
	if _, err := l.Append(simpleBatch(1, 10, 1), AppendOptions{LogAppendTime: -1}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync: %v", err)
	}
	if l.HighWatermark() != 0 {
		t.Fatalf("high watermark %d: an unsynced batch was acknowledged", l.HighWatermark())
	}
	cfg.BeforeIO = nil
	l.UpdateConfig(cfg)
	if _, err := l.Append(simpleBatch(1, 10, 1), AppendOptions{LogAppendTime: -1}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append after a failed fsync: %v, want the sticky error", err)
	}
}
