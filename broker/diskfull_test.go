package broker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduce_RealFullDisk runs the broker on a 4 MiB tmpfs: producing until
// the disk is full answers KAFKA_STORAGE_ERROR and takes the log dir
// offline (the broker is not ready, gregor_offline_log_dirs is 1,
// DescribeLogDirs answers the dir KAFKA_STORAGE_ERROR, every produce is
// refused at once), acknowledges nothing it did not write, keeps serving
// reads, and once space is freed the probe brings the dir back and writes
// resume at the next offset. It needs root (mount); elsewhere the
// injected-fault storage tests cover the write path.
func TestProduce_RealFullDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); the storage fault-injection tests cover this path", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	data := filepath.Join(dir, "data")
	b, addr := startBroker(t, data, nil)
	if _, err := b.createTopic("full", 1, nil); err != nil {
		t.Fatal(err)
	}
	// Leave about 1 MiB free, in a file we can delete later.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	value := strings.Repeat("v", 100<<10) // 100 KiB records
	var acked int64
	var full bool
	for i := 0; i < 40 && !full; i++ {
		got := producePartition(t, cl, produceReq("full", 0, makeBatch([]string{value}, -1, -1, -1)))
		switch got.ErrorCode {
		case 0:
			if got.BaseOffset != acked {
				t.Fatalf("acknowledged offset %d, want %d", got.BaseOffset, acked)
			}
			acked++
		case kerr.KafkaStorageError.Code:
			full = true
		default:
			t.Fatalf("produce on a filling disk: %v", kerr.ErrorForCode(got.ErrorCode))
		}
	}
	if !full {
		t.Fatal("the disk never filled up")
	}
	if b.Ready() || b.LogDirError() == nil {
		t.Fatalf("ready %v, log dir error %v on a full disk", b.Ready(), b.LogDirError())
	}
	if got := gatherGauge(t, b, "gregor_offline_log_dirs"); got != 1 {
		t.Fatalf("gregor_offline_log_dirs %v on a full disk", got)
	}
	ldr := kmsg.NewPtrDescribeLogDirsRequest()
	kr, err := cl.Broker(0).Request(testCtx(t), ldr) // unsharded: kgo's merge drops the dir's error code
	ldresp, _ := kr.(*kmsg.DescribeLogDirsResponse)
	if err != nil || ldresp == nil || len(ldresp.Dirs) != 1 || ldresp.Dirs[0].ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("DescribeLogDirs on a full disk: %+v, %v", ldresp, err)
	}
	// A small batch that would fit is refused too: the dir is offline.
	if got := producePartition(t, cl, produceReq("full", 0, makeBatch([]string{"x"}, -1, -1, -1))); got.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("small produce to an offline log dir: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	p := b.lookupTopic("full").partitions[0]
	if hw := p.log.HighWatermark(); hw != acked {
		t.Fatalf("high watermark %d, acknowledged %d", hw, acked)
	}
	// Reads still work during the outage.
	cons := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"full": {0: kgo.NewOffset().AtStart()}}))
	var n int64
	for n < acked {
		fs := cons.PollFetches(testCtx(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += int64(len(fs.Records()))
	}
	// Space returns: writes resume at the next offset.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the log dir back online", func() bool { return b.Ready() })
	if got := gatherGauge(t, b, "gregor_offline_log_dirs"); got != 0 {
		t.Fatalf("gregor_offline_log_dirs %v once space returned", got)
	}
	got := producePartition(t, cl, produceReq("full", 0, makeBatch([]string{value}, -1, -1, -1)))
	if got.ErrorCode != 0 || got.BaseOffset != acked {
		t.Fatalf("produce after freeing space: %v at %d, want offset %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, acked)
	}
	t.Logf("acknowledged %d records before the disk filled; writes resumed at offset %d", acked, got.BaseOffset)
}

// gatherGauge returns the value of the broker's unlabelled gauge name.
func gatherGauge(t *testing.T, b *Broker, name string) float64 {
	t.Helper()
	mfs, err := b.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
