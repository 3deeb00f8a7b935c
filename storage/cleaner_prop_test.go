package storage

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// cleanModel is what was appended: every record by offset.
type cleanModel struct {
	mu      sync.Mutex
	records map[int64]logRecord
}

func (m *cleanModel) get(off int64) (logRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[off]
	return r, ok
}

// appendRandom appends a random batch of 1-4 records over nkeys keys (a
// tenth of them tombstones), compressed one time in four.
func (m *cleanModel) appendRandom(t testing.TB, l *Log, rng *rand.Rand, nkeys int, ts int64) {
	n := 1 + rng.Intn(4)
	recs := make([]rec, n)
	base := l.LogEndOffset()
	for i := range recs {
		recs[i] = rec{key: []byte(fmt.Sprintf("k%d", rng.Intn(nkeys))), ts: ts}
		if rng.Intn(10) != 0 {
			recs[i].value = []byte(fmt.Sprintf("v%d-%d", base+int64(i), rng.Intn(1000)))
		}
	}
	b := makeBatch(batchOpts{gzip: rng.Intn(4) == 0}, recs...)
	m.mu.Lock()
	for i, r := range recs {
		m.records[base+int64(i)] = logRecord{offset: base + int64(i), key: r.key, value: r.value}
	}
	m.mu.Unlock()
	if res := mustAppend(t, l, b); res.BaseOffset != base {
		t.Fatalf("appended at %d, expected %d", res.BaseOffset, base)
	}
}

// check verifies the log against the model after a complete Clean: every
// record read is the one appended at its offset, offsets increase, every
// key's latest record is there unless it is a tombstone, each key has at
// most one record below the cleaner checkpoint, and nothing at or above it
// (the active segment included) is missing.
func (m *cleanModel) check(t testing.TB, l *Log) { m.checkWith(t, l, true) }

// checkWith is check; without complete, only the records read and the
// latest values are checked (an interrupted clean).
func (m *cleanModel) checkWith(t testing.TB, l *Log, complete bool) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[int64]bool{}
	below := map[string]int64{}
	ckpt := l.cleanerCheckpoint()
	if !complete {
		ckpt = -1
	}
	for _, e := range readEntries(t, l) {
		for _, r := range e.records {
			want, ok := m.records[r.offset]
			if !ok || !bytes.Equal(want.key, r.key) || !bytes.Equal(want.value, r.value) || (want.value == nil) != (r.value == nil) {
				t.Fatalf("offset %d: read %s=%s, appended %s=%s (%v)", r.offset, r.key, r.value, want.key, want.value, ok)
			}
			seen[r.offset] = true
			if r.offset < ckpt {
				if prev, dup := below[string(r.key)]; dup {
					t.Fatalf("key %s at %d and %d, both below the cleaner checkpoint %d", r.key, prev, r.offset, ckpt)
				}
				below[string(r.key)] = r.offset
			}
		}
	}
	latest := map[string]int64{}
	for off, r := range m.records {
		if complete && off >= ckpt && !seen[off] {
			t.Fatalf("offset %d (%s) above the cleaner checkpoint %d is missing", off, r.key, ckpt)
		}
		if p, ok := latest[string(r.key)]; !ok || off > p {
			latest[string(r.key)] = off
		}
	}
	for k, off := range latest {
		if m.records[off].value != nil && !seen[off] {
			t.Fatalf("key %s: latest value at %d is missing", k, off)
		}
	}
}

// TestCleaner_RandomWorkloads: random appends, rolls and cleans (with maps
// small enough to need several passes), with a reader scanning the log
// from the start concurrently; after every clean the model's invariants
// hold (see check), and the log reopens (cleanly or after a crash) to the
// same records.
func TestCleaner_RandomWorkloads(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			dir := filepath.Join(t.TempDir(), "t-0")
			clk := &clock{ms: 1_000_000}
			cfg := testConfig()
			cfg.Now, cfg.Decompress = clk.now, gunzip
			cfg.SegmentBytes = int64(512 + rng.Intn(2048))
			cfg.IndexIntervalBytes = 128
			l := openLog(t, dir, cfg)
			defer func() { l.Close() }()
			m := &cleanModel{records: map[int64]logRecord{}}
			nkeys := 5 + rng.Intn(40)

			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // a concurrent reader: offsets increase, records match
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					lg := l
					prev := int64(-1)
					for off := lg.LogStartOffset(); off < lg.HighWatermark(); {
						res, err := lg.Read(off, 1<<16, true)
						if err != nil {
							t.Errorf("concurrent read at %d: %v", off, err)
							return
						}
						b, err := res.Slice.ReadAll()
						res.Slice.Release()
						if err != nil || len(b) == 0 {
							if err != nil {
								t.Errorf("concurrent read at %d: %v", off, err)
							}
							break
						}
						for len(b) >= BatchHeaderSize {
							h := parseHeader(b)
							if int64(len(b)) < h.Size() {
								break
							}
							if h.LastOffset() >= off {
								if h.BaseOffset <= prev || crcOf(b[:h.Size()]) != h.CRC {
									t.Errorf("concurrent read: batch at %d after %d (crc ok %v)", h.BaseOffset, prev, crcOf(b[:h.Size()]) == h.CRC)
									return
								}
								if _, ok := m.get(h.LastOffset()); !ok {
									t.Errorf("concurrent read: batch ending at %d was never appended", h.LastOffset())
									return
								}
								prev, off = h.LastOffset(), h.LastOffset()+1
							}
							b = b[h.Size():]
						}
					}
				}
			}()

			for op := 0; op < 400; op++ {
				clk.ms += int64(rng.Intn(20))
				switch r := rng.Intn(100); {
				case r < 90:
					m.appendRandom(t, l, rng, nkeys, clk.ms)
				case r < 93:
					l.mu.Lock()
					if _, err := l.rollLocked(); err != nil {
						t.Fatal(err)
					}
					l.mu.Unlock()
				default:
					keys := int64(4 + rng.Intn(3*nkeys)) // a batch holds up to 4 keys
					opts := CleanOptions{Map: NewOffsetMap(keys*offsetMapSlotBytes*2, 0.5), DeleteRetentionMs: int64(rng.Intn(50)), Compress: gzipCompress}
					if _, err := l.Clean(opts); err != nil {
						t.Fatalf("op %d: Clean: %v", op, err)
					}
					m.check(t, l)
				}
			}
			close(stop)
			wg.Wait()
			if _, err := l.Clean(CleanOptions{Map: NewOffsetMap(1<<16, 0), Compress: gzipCompress}); err != nil {
				t.Fatal(err)
			}
			m.check(t, l)
			before := readEntries(t, l)
			crashed := crashCopy(t, dir)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{dir, crashed} {
				l = openLog(t, d, cfg)
				if got := readEntries(t, l); fmt.Sprint(got) != fmt.Sprint(before) {
					t.Fatalf("%s reopened to %d batches, had %d", d, len(got), len(before))
				}
				m.check(t, l)
				l.Close()
			}
			l = openLog(t, dir, cfg)
		})
	}
}

// TestCleaner_SliceOfReplacedSegmentStaysReadable: a reader holding a Slice
// of a segment the cleaner replaces reads the old bytes.
func TestCleaner_SliceOfReplacedSegmentStaysReadable(t *testing.T) {
	cfg := testConfig()
	l := openLog(t, filepath.Join(t.TempDir(), "t-0"), cfg)
	defer l.Close()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, makeBatch(batchOpts{}, rec{key: []byte("k"), value: []byte(strconv.Itoa(i)), ts: 1}))
	}
	l.mu.Lock()
	l.rollLocked()
	l.mu.Unlock()
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := res.Slice.ReadAll()
	stats, err := l.Clean(CleanOptions{Map: NewOffsetMap(1<<12, 0)})
	if err != nil || stats.SegmentsCleaned != 1 || stats.RecordsKept != 1 {
		t.Fatalf("Clean: %+v, %v", stats, err)
	}
	after, err := res.Slice.ReadAll()
	res.Slice.Release()
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("slice of the replaced segment: %v, same bytes %v", err, bytes.Equal(before, after))
	}
	if got := readEntries(t, l); len(got) != 1 || got[0].h.BaseOffset != 9 {
		t.Fatalf("after clean: %v", got)
	}
}

// TestCleaner_KilledDuringSwap kills (SIGKILL) a process in the middle of a
// clean at each step of the swap, in the first and in a later segment
// group, and reopens the log: the interrupted group is either entirely the
// old segments or entirely the cleaned one, no .cleaned or .swap file is
// left, every record read is the one appended at its offset, and a new
// Clean finishes the job.
func TestCleaner_KilledDuringSwap(t *testing.T) {
	if spec := os.Getenv("STORAGE_CLEAN_CRASH"); spec != "" {
		crashChild(spec)
		return
	}
	for _, step := range []string{"clean-commit", "clean-swap", "clean-rename"} {
		for _, nth := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s-%d", step, nth), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "t-0")
				cfg := crashCleanConfig()
				l := openLog(t, dir, cfg)
				m := &cleanModel{records: map[int64]logRecord{}}
				rng := rand.New(rand.NewSource(int64(nth)))
				for i := 0; i < 300; i++ {
					m.appendRandom(t, l, rng, 20, 1)
				}
				before := readEntries(t, l)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestCleaner_KilledDuringSwap$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("STORAGE_CLEAN_CRASH=%s|%s|%d", dir, step, nth))
				out, err := cmd.CombinedOutput()
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("child was not killed: %v\n%s", err, out)
				}
				l = openLog(t, dir, cfg)
				defer func() { l.Close() }()
				names, _ := filepath.Glob(filepath.Join(dir, "*"))
				for _, n := range names {
					if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
						t.Fatalf("left behind: %s", n)
					}
				}
				m.checkWith(t, l, false)
				after := readEntries(t, l)
				var recsBefore, recsAfter int
				for _, e := range before {
					recsBefore += len(e.records)
				}
				for _, e := range after {
					recsAfter += len(e.records)
				}
				if recsAfter > recsBefore || recsAfter == 0 {
					t.Fatalf("%d records after the crash, %d before", recsAfter, recsBefore)
				}
				// Records read match the model; a full clean then gives
				// exactly the latest values.
				if _, err := l.Clean(CleanOptions{Map: NewOffsetMap(1<<16, 0), Compress: gzipCompress}); err != nil {
					t.Fatal(err)
				}
				m.check(t, l)
			})
		}
	}
}

func crashCleanConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.Decompress = gunzip
	return cfg
}

// crashChild runs in the child process: it cleans the log and kills itself
// at the nth occurrence of the given step.
func crashChild(spec string) {
	parts := strings.Split(spec, "|")
	nth, _ := strconv.Atoi(parts[2])
	cfg := crashCleanConfig()
	count := 0
	cfg.BeforeIO = func(op, path string) error {
		if op == parts[1] {
			if count++; count == nth {
				p, _ := os.FindProcess(os.Getpid())
				p.Kill() // SIGKILL
				select {}
			}
		}
		return nil
	}
	l, err := Open(parts[0], cfg)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	l.mu.Lock()
	l.rollLocked()
	l.mu.Unlock()
	if _, err := l.Clean(CleanOptions{Map: NewOffsetMap(1<<16, 0), Compress: gzipCompress}); err != nil {
		fmt.Println("clean:", err)
	}
	os.Exit(3)
}
