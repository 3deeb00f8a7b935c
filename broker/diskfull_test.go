package broker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduce_RealFullDisk runs the broker on a 4 MiB tmpfs: producing until
// the disk is full answers KAFKA_STORAGE_ERROR, acknowledges nothing it did
// not write, keeps serving reads, and accepts writes again once space is
// freed. It needs root (mount); elsewhere the injected-fault storage tests
// cover the same path.
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
	got := producePartition(t, cl, produceReq("full", 0, makeBatch([]string{value}, -1, -1, -1)))
	if got.ErrorCode != 0 || got.BaseOffset != acked {
		t.Fatalf("produce after freeing space: %v at %d, want offset %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, acked)
	}
	t.Logf("acknowledged %d records before the disk filled; writes resumed at offset %d", acked, got.BaseOffset)
}
