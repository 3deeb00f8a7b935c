package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

const crashChildEnv = "STORAGE_CRASH_CHILD_DIR"

// crashBatch is the i-th batch the crash child appends: two records from
// idempotent producer 1, sequence 2i, of a size that varies with i.
func crashBatch(i int) []byte {
	v := bytes.Repeat([]byte{byte(i)}, 10+(i*37)%500)
	return makeBatch(batchOpts{producerID: pid(1), seq: int32(2 * i)},
		rec{key: []byte(fmt.Sprint(i)), value: v, ts: int64(1000 + i)},
		rec{value: v[:len(v)/2], ts: int64(1000 + i)})
}

func crashConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 32 << 10
	cfg.IndexIntervalBytes = 1024
	return cfg
}

// TestCrashChild is the child process of TestLog_Kill9KeepsAcknowledged: it
// appends batches forever from where the log ends, printing each
// acknowledged one.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("helper process for TestLog_Kill9KeepsAcknowledged")
	}
	l, err := Open(dir, crashConfig())
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	for i := int(l.LogEndOffset() / 2); ; i++ {
		res, err := l.Append(crashBatch(i), AppendOptions{LogAppendTime: -1})
		if err != nil {
			fmt.Println("append:", err)
			os.Exit(2)
		}
		fmt.Printf("acked %d %d\n", i, res.BaseOffset)
	}
}

func TestLog_Kill9KeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := filepath.Join(t.TempDir(), "t-0")
	for round := 0; round < 4; round++ { // crash, recover, append more, crash again
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		acked := -1
		for n := 0; n < 400 && sc.Scan(); n++ {
			var i int
			var base int64
			if _, err := fmt.Sscanf(sc.Text(), "acked %d %d", &i, &base); err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			if base != int64(2*i) {
				t.Fatalf("batch %d at offset %d", i, base)
			}
			acked = i
		}
		cmd.Process.Kill() // SIGKILL, mid-append
		cmd.Wait()
		if acked < 0 {
			t.Fatal("child acknowledged nothing")
		}

		l := openLog(t, dir, crashConfig())
		n := int(l.LogEndOffset() / 2)
		if n <= acked {
			t.Fatalf("round %d: %d batches recovered, %d acknowledged", round, n, acked+1)
		}
		for i, b := range readLog(t, l) {
			if want := crashBatch(i); !bytes.Equal(b[16:], want[16:]) {
				t.Fatalf("round %d: batch %d differs", round, i)
			}
		}
		// The producer continues: its last batch is known, a gap is not accepted.
		if _, err := l.Append(crashBatch(n+1), AppendOptions{LogAppendTime: -1}); err == nil {
			t.Fatalf("round %d: sequence gap accepted", round)
		}
		if res, err := l.Append(crashBatch(n-1), AppendOptions{LogAppendTime: -1}); err != nil || !res.Duplicate {
			t.Fatalf("round %d: retry of the last batch: %+v %v", round, res, err)
		}
		// The next child opens after a clean or an unclean shutdown.
		if round%2 == 0 {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			abandon(l)
		}
	}
}

// abandon drops a Log as a crash would: its files are left as they are.
func abandon(l *Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed.Store(true)
	l.releaseAllLocked()
}
