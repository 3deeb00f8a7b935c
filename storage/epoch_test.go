package storage

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// epochLog appends batches of 2 records in epochs 1 (0-3), 3 (4-7) and 5
// (8-9) to a new log.
func epochLog(t *testing.T, dir string, cfg Config) *Log {
	t.Helper()
	l := openLog(t, dir, cfg)
	for i, epoch := range []int32{1, 1, 3, 3, 5} {
		if _, err := l.Append(simpleBatch(2, 10, 1000+int64(i)), AppendOptions{LeaderEpoch: epoch, LogAppendTime: -1}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

var wantEpochs = []EpochEntry{{1, 0}, {3, 4}, {5, 8}}

func TestLog_EndOffsetForLeaderEpoch(t *testing.T) {
	l := epochLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	if got := l.LeaderEpochs(); !slices.Equal(got, wantEpochs) || l.LatestLeaderEpoch() != 5 {
		t.Fatalf("epochs %v latest %d", got, l.LatestLeaderEpoch())
	}
	for _, tt := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1},
		{0, 0, 0}, // below the first epoch: Kafka answers the first epoch's start
		{1, 1, 4},
		{2, 1, 4},
		{3, 3, 8},
		{4, 3, 8},
		{5, 5, 10}, // latest: the log end offset
		{6, -1, -1},
	} {
		if e, off := l.EndOffsetForLeaderEpoch(tt.epoch); e != tt.wantEpoch || off != tt.wantEnd {
			t.Errorf("EndOffsetForLeaderEpoch(%d) = (%d, %d), want (%d, %d)", tt.epoch, e, off, tt.wantEpoch, tt.wantEnd)
		}
	}
	empty := openLog(t, filepath.Join(t.TempDir(), "t-1"), testConfig())
	defer empty.Close()
	if e, off := empty.EndOffsetForLeaderEpoch(0); e != -1 || off != -1 || empty.LatestLeaderEpoch() != -1 {
		t.Fatalf("empty cache: (%d, %d), latest %d", e, off, empty.LatestLeaderEpoch())
	}
}

func TestLog_AssignLeaderEpoch(t *testing.T) {
	l := epochLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	for _, tt := range []struct {
		epoch int32
		start int64
		want  []EpochEntry
	}{
		{4, 10, wantEpochs}, // not above the latest: ignored
		{7, 10, append(slices.Clone(wantEpochs), EpochEntry{7, 10})}, // new leader at the LEO
		{8, 10, append(slices.Clone(wantEpochs), EpochEntry{8, 10})}, // again, nothing written in 7
	} {
		if err := l.AssignLeaderEpoch(tt.epoch, tt.start); err != nil {
			t.Fatal(err)
		}
		if got := l.LeaderEpochs(); !slices.Equal(got, tt.want) {
			t.Fatalf("after AssignLeaderEpoch(%d, %d): %v, want %v", tt.epoch, tt.start, got, tt.want)
		}
	}
	// An append in an older epoch than the latest adds nothing.
	if _, err := l.Append(simpleBatch(1, 1, 1), AppendOptions{LeaderEpoch: 6, LogAppendTime: -1}); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForLeaderEpoch(5); e != 5 || off != 10 {
		t.Fatalf("end of epoch 5: (%d, %d)", e, off)
	}
}

func TestLog_LeaderEpochFileSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.SegmentBytes = 200
	l := epochLog(t, dir, cfg)
	l.Close()
	b, err := os.ReadFile(filepath.Join(dir, leaderEpochFileName))
	if err != nil || string(b) != "0\n3\n1 0\n3 4\n5 8\n" {
		t.Fatalf("leader-epoch-checkpoint %q %v", b, err)
	}
	for _, damage := range []func(string){
		func(string) {},
		func(p string) { os.Remove(p) },
		func(p string) { os.WriteFile(p, []byte("0\n3\n1 0\n3 4\n"), 0o644) },
		func(p string) { os.WriteFile(p, []byte("0\n2\n3 4\n1 0\n"), 0o644) },
	} {
		damage(filepath.Join(dir, leaderEpochFileName))
		l = openLog(t, dir, cfg)
		if got := l.LeaderEpochs(); !slices.Equal(got, wantEpochs) {
			t.Fatalf("reopened: %v", got)
		}
		l.Close()
		if b, _ := os.ReadFile(filepath.Join(dir, leaderEpochFileName)); string(b) != "0\n3\n1 0\n3 4\n5 8\n" {
			t.Fatalf("file not rewritten: %q", b)
		}
	}
	// An unclean open that loses the tail drops the epochs starting there.
	l = openLog(t, dir, cfg)
	crashed := crashCopy(t, dir)
	l.Close()
	last := segmentBases(l)
	os.Truncate(segFile(crashed, last[len(last)-1], logSuffix), 0)
	l = openLog(t, crashed, cfg)
	defer l.Close()
	if got := l.LeaderEpochs(); l.LogEndOffset() != 8 || !slices.Equal(got, wantEpochs[:2]) {
		t.Fatalf("leo %d epochs %v after losing the last segment", l.LogEndOffset(), got)
	}
}

func TestLog_LeaderEpochsFollowLogStart(t *testing.T) {
	l := epochLog(t, filepath.Join(t.TempDir(), "t-0"), testConfig())
	defer l.Close()
	if _, err := l.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	if got, want := l.LeaderEpochs(), []EpochEntry{{3, 6}, {5, 8}}; !slices.Equal(got, want) {
		t.Fatalf("after DeleteRecordsBefore(6): %v, want %v", got, want)
	}
	if _, err := l.DeleteRecordsBefore(8); err != nil {
		t.Fatal(err)
	}
	if got, want := l.LeaderEpochs(), []EpochEntry{{5, 8}}; !slices.Equal(got, want) {
		t.Fatalf("after DeleteRecordsBefore(8): %v, want %v", got, want)
	}
}

func TestLog_AppendAsFollowerAssignsEpochs(t *testing.T) {
	root := t.TempDir()
	leader := epochLog(t, filepath.Join(root, "leader"), testConfig())
	defer leader.Close()
	follower := openLog(t, filepath.Join(root, "follower"), testConfig())
	defer follower.Close()
	replicate(t, leader, follower, 150)
	if got := follower.LeaderEpochs(); !slices.Equal(got, wantEpochs) {
		t.Fatalf("follower epochs %v", got)
	}
}

// TestLog_LazyEpochEntryFoundAgainAfterCrash: an epoch that a batch starts
// is written to the leader-epoch file without an fsync; when a crash loses
// that write (the file still holds the entries synced with the last
// recovery point), recovery finds the entry again in the batches it
// revalidates, so OffsetForLeaderEpoch answers as before the crash.
func TestLog_LazyEpochEntryFoundAgainAfterCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.ReplicatedHighWatermark = true
	l := openLog(t, dir, cfg)
	appendEpochs(t, l, 1, 1, 1)
	if err := l.Flush(); err != nil { // recovery point 6, the file synced with {1 0}
		t.Fatal(err)
	}
	synced, err := os.ReadFile(filepath.Join(dir, leaderEpochFileName))
	if err != nil {
		t.Fatal(err)
	}
	appendEpochs(t, l, 3, 3)
	want := []EpochEntry{{1, 0}, {3, 6}}
	if got := l.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("before the crash: %v, want %v", got, want)
	}
	crashed := crashCopy(t, dir)
	l.Close()
	// The lazy replacement did not reach the disk.
	if err := os.WriteFile(filepath.Join(crashed, leaderEpochFileName), synced, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, crashed, cfg)
	defer l.Close()
	if got := l.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("after the crash: %v, want %v", got, want)
	}
	if e, end := l.EndOffsetForLeaderEpoch(1); e != 1 || end != 6 {
		t.Fatalf("EndOffsetForLeaderEpoch(1) = %d, %d; want 1, 6", e, end)
	}
}

// appendEpochs appends one batch of 2 records in each of epochs.
func appendEpochs(t *testing.T, l *Log, epochs ...int32) {
	t.Helper()
	for _, epoch := range epochs {
		if _, err := l.Append(simpleBatch(2, 10, 1000), AppendOptions{LeaderEpoch: epoch, LogAppendTime: -1}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLog_AssignedEpochWrittenAtTheNextCheckpoint: a replica becoming
// leader (AssignLeaderEpoch at its log end offset) writes no file, so a
// failover of thousands of partitions does not write thousands; the entry
// reaches the file at the next flush, and a Close with nothing else to
// checkpoint writes it too.
func TestLog_AssignedEpochWrittenAtTheNextCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	cfg.ReplicatedHighWatermark = true
	l := openLog(t, dir, cfg)
	appendEpochs(t, l, 1, 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	file := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, leaderEpochFileName))
		return string(b)
	}
	if got := file(); got != "0\n1\n1 0\n" {
		t.Fatalf("after the flush: %q", got)
	}
	if err := l.AssignLeaderEpoch(4, 4); err != nil {
		t.Fatal(err)
	}
	if got := file(); got != "0\n1\n1 0\n" {
		t.Fatalf("AssignLeaderEpoch wrote the file: %q", got)
	}
	if e, end := l.EndOffsetForLeaderEpoch(1); e != 1 || end != 4 {
		t.Fatalf("EndOffsetForLeaderEpoch(1) = %d, %d; want 1, 4", e, end)
	}
	appendEpochs(t, l, 4)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := file(); got != "0\n2\n1 0\n4 4\n" {
		t.Fatalf("after the next flush: %q", got)
	}
	// An idle leader's stop: the checkpoint is unchanged, the epoch not.
	if err := l.AssignLeaderEpoch(6, 6); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := file(); got != "0\n3\n1 0\n4 4\n6 6\n" {
		t.Fatalf("after Close: %q", got)
	}
	// Opening drops an entry at the log end offset (an epoch with no
	// batch), as it always has.
	l = openLog(t, dir, cfg)
	defer l.Close()
	if got, want := l.LeaderEpochs(), []EpochEntry{{1, 0}, {4, 4}}; !slices.Equal(got, want) {
		t.Fatalf("reopened: %v, want %v", got, want)
	}
}

// A crash before a partition's leader-epoch cache was first written leaves
// no file, as it does for every partition written since its last flush:
// rebuilding it is not a warning (thousands of partitions would log one
// each); a damaged file still is.
func TestLog_MissingEpochFileAfterCrashIsNoWarning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	var logged syncBuffer
	cfg := testConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l := openLog(t, dir, cfg)
	appendEpochs(t, l, 1, 2)
	crashed := crashCopy(t, dir)
	l.Close()
	if fileExists(filepath.Join(crashed, leaderEpochFileName)) {
		t.Fatal("the leader-epoch file was written before the crash")
	}
	l = openLog(t, crashed, cfg)
	if got, want := l.LeaderEpochs(), []EpochEntry{{1, 0}, {2, 2}}; !slices.Equal(got, want) {
		t.Fatalf("after the crash: %v, want %v", got, want)
	}
	crashed2 := crashCopy(t, crashed)
	l.Close()
	if strings.Contains(logged.String(), "leader-epoch") {
		t.Fatalf("a missing file was warned about:\n%s", logged.String())
	}
	if err := os.WriteFile(filepath.Join(crashed2, leaderEpochFileName), []byte("0\n9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, crashed2, cfg)
	defer l.Close()
	if !strings.Contains(logged.String(), "rebuilding the leader-epoch cache") {
		t.Fatalf("a damaged file was not warned about:\n%s", logged.String())
	}
}
