package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
)

// Offset index (.index): a sparse map from offsets to .log file positions,
// an array of 8-byte big-endian entries, with no header and no checksum:
//
//	0 relativeOffset uint32  last offset of a batch minus the segment's base offset
//	4 position       uint32  byte position in the .log file where that batch starts
//
// An entry is added for a batch when more than IndexIntervalBytes of log were
// written since the previous entry (Kafka's rule, so the first batch of a
// segment is never indexed). Both fields are strictly increasing. To find
// offset x, take the last entry with relativeOffset <= x-base (or position 0)
// and scan batch headers forward to the first batch whose last offset is >= x.
//
// Time index (.timeindex): 12-byte big-endian entries:
//
//	0 timestamp      int64   largest batch maxTimestamp seen so far in the segment
//	8 relativeOffset uint32  last offset of the batch where that timestamp was first reached
//
// An entry is added together with an offset-index entry when the segment's
// largest timestamp grew since the previous time-index entry, and once more
// when the segment is rolled or closed, so the last entry of a closed segment
// holds its largest timestamp. Timestamps are strictly increasing, offsets
// non-decreasing.
//
// Neither file is trusted blindly: a file whose length is not a whole number
// of entries, whose entries are out of order or point past the segment, or
// that does not agree with the batches after its last entry is rebuilt from
// the .log file.
const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
)

// indexFile is an array of fixed-size entries: kept on the heap while its
// segment is active (appended to, written out incrementally), and mmapped
// read-only once the segment is closed so that it lives in the page cache
// (read onto the heap instead where there is no mmap: mmap_other.go).
// mu guards data and is never held across I/O on the segment.
type indexFile struct {
	fileMu    sync.Mutex // serialises persist and mapFile (writes to the file)
	mu        sync.RWMutex
	data      []byte
	mapped    bool
	persisted int // bytes of data known to be in the file (heap mode)
	// dropped: the mapping was released while the segment's file was
	// closed (filecache.go); restore maps the file again.
	dropped bool
}

// drop releases a read-only mapping until restore; heap entries stay.
func (x *indexFile) drop() {
	x.mu.Lock()
	if x.mapped {
		x.unmapLocked()
		x.dropped = true
	}
	x.mu.Unlock()
}

// restore maps path again after drop; it does nothing otherwise.
func (x *indexFile) restore(path string) error {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	x.mu.RLock()
	dropped := x.dropped
	x.mu.RUnlock()
	if !dropped {
		return nil
	}
	return x.mapFileLocked(path)
}

// setHeap replaces the entries with heap data, of which the first persisted
// bytes are already in the file.
func (x *indexFile) setHeap(data []byte, persisted int) {
	x.mu.Lock()
	x.unmapLocked()
	x.data, x.mapped, x.persisted = data, false, persisted
	x.mu.Unlock()
}

// unmapLocked releases an mmapped array. Lock should be held.
func (x *indexFile) unmapLocked() {
	if x.mapped && x.data != nil {
		munmap(x.data)
	}
	x.data, x.mapped, x.dropped = nil, false, false
}

// release drops the entries (segment closed for good).
func (x *indexFile) release() {
	x.mu.Lock()
	x.unmapLocked()
	x.persisted = 0
	x.mu.Unlock()
}

// appendEntry appends one entry (heap mode only).
func (x *indexFile) appendEntry(e []byte) {
	x.mu.Lock()
	x.data = append(x.data, e...)
	x.mu.Unlock()
}

// persist writes the entries not yet in the file at path, and fsyncs it when
// sync is set. It does nothing once the entries are mmapped.
func (x *indexFile) persist(path string, sync bool) error {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	x.mu.RLock()
	if x.mapped || x.dropped {
		x.mu.RUnlock()
		return nil
	}
	from := x.persisted
	pending := append([]byte(nil), x.data[from:]...)
	x.mu.RUnlock()
	if len(pending) == 0 && !sync {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return ioErr("open", path, err)
	}
	if _, err := f.WriteAt(pending, int64(from)); err != nil {
		f.Close()
		return ioErr("write", path, err)
	}
	// A longer file (stale entries from before a rebuild) is cut to size.
	if err := f.Truncate(int64(from + len(pending))); err != nil {
		f.Close()
		return ioErr("truncate", path, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return ioErr("fsync", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return ioErr("close", path, err)
	}
	x.mu.Lock()
	if !x.mapped && from+len(pending) > x.persisted {
		x.persisted = from + len(pending)
	}
	x.mu.Unlock()
	return nil
}

// mapFile replaces the entries by a read-only mapping of path, which must hold
// exactly the same entries (or be trusted). An empty file maps to no entries.
func (x *indexFile) mapFile(path string) error {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	return x.mapFileLocked(path)
}

// mapFileLocked is mapFile with fileMu held.
func (x *indexFile) mapFileLocked(path string) error {
	data, err := mmapFile(path)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.unmapLocked()
	x.data, x.mapped, x.persisted = data, data != nil, len(data)
	x.mu.Unlock()
	return nil
}

// readIndexFile reads a whole index file onto the heap; an empty file
// gives nil. It is mmapFile on systems without mmap (mmap_other.go), with
// the same size limit.
func readIndexFile(path string) ([]byte, error) {
	f, size, err := openIndexFile(path, "read")
	if f == nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, ioErr("read", path, err)
	}
	return data, nil
}

// openIndexFile opens an index file to map or read (op, for errors) and
// returns its size; a nil file when it is empty, too large (over 2 GiB,
// an error) or does not open.
func openIndexFile(path, op string) (*os.File, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, ioErr("open", path, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, 0, ioErr("stat", path, err)
	case fi.Size() == 0:
		f.Close()
		return nil, 0, nil
	case fi.Size() > math.MaxInt32:
		f.Close()
		return nil, 0, ioErr(op, path, fmt.Errorf("index of %d bytes is too large", fi.Size()))
	}
	return f, int(fi.Size()), nil
}

// offsetIndex is a segment's .index.
type offsetIndex struct{ indexFile }

func offsetEntry(data []byte, i int) (rel, pos uint32) {
	e := data[i*offsetIndexEntrySize:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

// lookup returns the last entry whose relative offset is <= rel, or (-1, 0).
func (x *offsetIndex) lookup(rel int64) (entryRel, pos int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return offsetLookup(x.data, rel)
}

// offsetLookup is lookup on raw entries: the relative offset and position of
// the last entry with relativeOffset <= rel, or (-1, 0).
func offsetLookup(data []byte, rel int64) (int64, int64) {
	n := len(data) / offsetIndexEntrySize
	i := sort.Search(n, func(i int) bool {
		r, _ := offsetEntry(data, i)
		return int64(r) > rel
	})
	if i == 0 {
		return -1, 0
	}
	r, pos := offsetEntry(data, i-1)
	return int64(r), int64(pos)
}

func (x *offsetIndex) add(rel, pos int64) {
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(rel))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	x.appendEntry(e[:])
}

// checkOffsetIndex reports why data is not a valid offset index for a segment
// of segSize bytes whose last relative offset is at most maxRel.
func checkOffsetIndex(data []byte, maxRel, segSize int64) error {
	if len(data)%offsetIndexEntrySize != 0 {
		return fmt.Errorf("length %d is not a multiple of %d", len(data), offsetIndexEntrySize)
	}
	prevRel, prevPos := int64(-1), int64(-1)
	for i := 0; i < len(data)/offsetIndexEntrySize; i++ {
		r, p := offsetEntry(data, i)
		rel, pos := int64(r), int64(p)
		if rel <= prevRel || pos <= prevPos {
			return fmt.Errorf("entry %d (%d, %d) out of order", i, rel, pos)
		}
		if rel > maxRel || pos+BatchHeaderSize > segSize {
			return fmt.Errorf("entry %d (%d, %d) beyond the segment", i, rel, pos)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

// timeIndex is a segment's .timeindex.
type timeIndex struct{ indexFile }

func timeEntry(data []byte, i int) (ts int64, rel uint32) {
	e := data[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

// lookupBefore returns the last entry whose timestamp is < ts: every record
// up to its offset has a smaller timestamp.
func (x *timeIndex) lookupBefore(ts int64) (entryTs, rel int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.data) / timeIndexEntrySize
	i := sort.Search(n, func(i int) bool {
		t, _ := timeEntry(x.data, i)
		return t >= ts
	})
	if i == 0 {
		return 0, 0, false
	}
	t, r := timeEntry(x.data, i-1)
	return t, int64(r), true
}

// last returns the last entry.
func (x *timeIndex) last() (ts, rel int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.data) / timeIndexEntrySize
	if n == 0 {
		return 0, 0, false
	}
	t, r := timeEntry(x.data, n-1)
	return t, int64(r), true
}

// maybeAdd appends (ts, rel) if ts is larger than the last entry's timestamp.
func (x *timeIndex) maybeAdd(ts, rel int64) {
	if lt, lr, ok := x.last(); ok && (ts <= lt || rel < lr) {
		return
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(rel))
	x.appendEntry(e[:])
}

// checkTimeIndex reports why data is not a valid time index for a segment
// whose last relative offset is at most maxRel.
func checkTimeIndex(data []byte, maxRel int64) error {
	if len(data)%timeIndexEntrySize != 0 {
		return fmt.Errorf("length %d is not a multiple of %d", len(data), timeIndexEntrySize)
	}
	prevTs, prevRel := int64(math.MinInt64), int64(-1)
	for i := 0; i < len(data)/timeIndexEntrySize; i++ {
		ts, r := timeEntry(data, i)
		rel := int64(r)
		if (i > 0 && ts <= prevTs) || rel < prevRel {
			return fmt.Errorf("entry %d (%d, %d) out of order", i, ts, rel)
		}
		if rel > maxRel {
			return fmt.Errorf("entry %d (%d, %d) beyond the segment", i, ts, rel)
		}
		prevTs, prevRel = ts, rel
	}
	return nil
}
