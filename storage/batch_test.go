package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// recrc fixes the CRC after a test edits a batch.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

func TestValidateBatch_Valid(t *testing.T) {
	b := makeBatch(batchOpts{producerID: pid(1), epoch: 3, seq: 10},
		rec{key: []byte("k"), value: []byte("v"), ts: 100, headers: [][2][]byte{{[]byte("h"), nil}}},
		rec{key: nil, value: nil, ts: 105},
	)
	h, err := ValidateBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{Length: int32(len(b) - 12), PartitionLeaderEpoch: -1, Magic: 2, CRC: h.CRC,
		LastOffsetDelta: 1, BaseTimestamp: 100, MaxTimestamp: 105, ProducerID: pid(1), ProducerEpoch: 3,
		BaseSequence: 10, RecordCount: 2}
	if h != want {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
	if h.LastSequence() != 11 || h.Size() != int64(len(b)) || h.LastOffset() != 1 {
		t.Fatalf("helpers: %d %d %d", h.LastSequence(), h.Size(), h.LastOffset())
	}
}

func TestValidateBatch_Errors(t *testing.T) {
	valid := func() []byte { return simpleBatch(3, 5, 1) }
	tests := []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:40] }, ErrCorruptBatch},
		{"empty", func(b []byte) []byte { return nil }, ErrCorruptBatch},
		{"magic1", func(b []byte) []byte { b[16] = 1; return b }, ErrUnsupportedMagic},
		{"length too large", func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], uint32(len(b))); return b }, ErrCorruptBatch},
		{"length negative", func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 0xfffffff0); return b }, ErrCorruptBatch},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }, ErrCorruptBatch},
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCorruptBatch},
		{"no records", func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0); return recrc(b) }, ErrInvalidRecord},
		{"lastOffsetDelta", func(b []byte) []byte { binary.BigEndian.PutUint32(b[23:], 1); return recrc(b) }, ErrInvalidRecord},
		{"more records than bytes", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 4)
			binary.BigEndian.PutUint32(b[23:], 3)
			return recrc(b)
		}, ErrInvalidRecord},
		{"fewer records than bytes", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 2)
			binary.BigEndian.PutUint32(b[23:], 1)
			return recrc(b)
		}, ErrInvalidRecord},
		{"huge record count", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 1<<31-1)
			binary.BigEndian.PutUint32(b[23:], 1<<31-2)
			return recrc(b)
		}, ErrInvalidRecord},
		{"record length past end", func(b []byte) []byte { b[61] = 0x7e; return recrc(b) }, ErrInvalidRecord},
		{"codec 7", func(b []byte) []byte { b[22] |= 7; return recrc(b) }, ErrInvalidRecord},
		{"offsetDelta", func(b []byte) []byte {
			// record 0: length, attributes, timestampDelta(0), offsetDelta(0 -> 1)
			b[61+3] = 2
			return recrc(b)
		}, ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateBatch(tt.edit(valid()))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidateBatch_CompressedNotWalked(t *testing.T) {
	b := makeBatch(batchOpts{gzip: true}, rec{value: []byte("x"), ts: 1}, rec{value: []byte("y"), ts: 2})
	h, err := ValidateBatch(b)
	if err != nil || h.Codec() != CodecGzip || h.RecordCount != 2 {
		t.Fatalf("%+v %v", h, err)
	}
}

func TestParseBatchHeader_Magic(t *testing.T) {
	if _, err := ParseBatchHeader([]byte{16: 1}); !errors.Is(err, ErrUnsupportedMagic) {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseBatchHeader([]byte{16: 2}); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("got %v", err)
	}
}

func TestIncSequence_Wraps(t *testing.T) {
	for _, tt := range []struct{ seq, delta, want int32 }{
		{0, 4, 4}, {1<<31 - 1, 1, 0}, {1<<31 - 3, 4, 1}, {1<<31 - 1, 0, 1<<31 - 1},
	} {
		if got := incSequence(tt.seq, tt.delta); got != tt.want {
			t.Errorf("incSequence(%d, %d) = %d, want %d", tt.seq, tt.delta, got, tt.want)
		}
	}
}
