package storage

import (
	"hash/maphash"
)

// OffsetMap is the cleaner's dedupe buffer (Kafka's SkimpyOffsetMap): a
// fixed-size open-addressing hash table from a record key to the offset of
// its latest record. A key is stored as a 128-bit hash (two independent
// 64-bit hashes), so an entry takes 24 bytes whatever the key's size, and
// the table never grows: its memory is fixed when it is made. A collision of
// two keys on all 128 bits would make the cleaner drop a record it should
// keep; with 2^20 keys its probability is about 2^-88.
//
// An OffsetMap is not safe for concurrent use; a cleaner thread owns one
// and reuses it for every log it cleans.
type OffsetMap struct {
	seed1, seed2 maphash.Seed
	slots        []uint64 // 3 words a slot: hash1, hash2, offset+1 (0 = empty)
	capacity     int
	maxEntries   int // capacity × load factor
	entries      int
	latest       int64 // largest offset put since Clear, -1 when none
}

// offsetMapSlotBytes is the memory of one slot: two hash words and an offset.
const offsetMapSlotBytes = 24

// DefaultDedupeBufferSize is log.cleaner.dedupe.buffer.size, 128 MiB, and
// DefaultDedupeLoadFactor log.cleaner.io.buffer.load.factor, 0.9.
const (
	DefaultDedupeBufferSize = 128 << 20
	DefaultDedupeLoadFactor = 0.9
)

// NewOffsetMap makes a map using bufferBytes of memory (at least one slot)
// that accepts keys until loadFactor of its slots are used (values outside
// (0, 1] mean DefaultDedupeLoadFactor).
func NewOffsetMap(bufferBytes int64, loadFactor float64) *OffsetMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = DefaultDedupeLoadFactor
	}
	capacity := int(max(bufferBytes/offsetMapSlotBytes, 2))
	m := &OffsetMap{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), slots: make([]uint64, 3*capacity), capacity: capacity}
	m.maxEntries = max(1, min(capacity-1, int(float64(capacity)*loadFactor)))
	m.latest = -1
	return m
}

// Capacity is how many keys the map accepts before it is full.
func (m *OffsetMap) Capacity() int { return m.maxEntries }

// Len is the number of distinct keys in the map.
func (m *OffsetMap) Len() int { return m.entries }

// MemoryBytes is the memory of the table.
func (m *OffsetMap) MemoryBytes() int64 { return int64(len(m.slots)) * 8 }

// Full reports whether n more keys might not fit.
func (m *OffsetMap) Full(n int) bool { return m.entries+n > m.maxEntries }

// LatestOffset is the largest offset put since the last Clear, -1 if none.
func (m *OffsetMap) LatestOffset() int64 { return m.latest }

// Clear empties the map.
func (m *OffsetMap) Clear() {
	clear(m.slots)
	m.entries, m.latest = 0, -1
}

func (m *OffsetMap) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
}

// Put records offset as the latest for key. It returns false, changing
// nothing, when key is new and the map is full.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h1, h2 := m.hash(key)
	i := m.find(h1, h2)
	s := m.slots[3*i:]
	if s[2] == 0 {
		if m.entries >= m.maxEntries {
			return false
		}
		m.entries++
		s[0], s[1] = h1, h2
	}
	s[2] = uint64(offset) + 1
	m.latest = max(m.latest, offset)
	return true
}

// Get returns the latest offset put for key, or -1.
func (m *OffsetMap) Get(key []byte) int64 {
	h1, h2 := m.hash(key)
	i := m.find(h1, h2)
	return int64(m.slots[3*i+2]) - 1
}

// find returns the slot holding (h1, h2) or the empty slot where it goes.
// The table always has an empty slot (maxEntries < capacity), so the
// fallback scan finds one when double hashing does not.
func (m *OffsetMap) find(h1, h2 uint64) int {
	i := int(h1 % uint64(m.capacity))
	step := int(h2%uint64(m.capacity-1)) + 1 // double hashing
	for probes := 0; probes < m.capacity; probes++ {
		s := m.slots[3*i:]
		if s[2] == 0 || (s[0] == h1 && s[1] == h2) {
			return i
		}
		i += step
		if i >= m.capacity {
			i -= m.capacity
		}
	}
	// Every slot is in use by other keys (load factor 1): linear scan.
	for i := 0; i < m.capacity; i++ {
		s := m.slots[3*i:]
		if s[2] == 0 || (s[0] == h1 && s[1] == h2) {
			return i
		}
	}
	panic("storage: offset map without an empty slot")
}
