package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Record batch v2, as stored in .log files and sent on the wire. All integers
// are big-endian; the header is 61 bytes:
//
//	 0 baseOffset           int64  offset of the first record (rewritten by Append)
//	 8 batchLength          int32  bytes after this field (total size - 12)
//	12 partitionLeaderEpoch int32  (rewritten by Append)
//	16 magic                int8   always 2
//	17 crc                  uint32 CRC-32C (Castagnoli) of bytes 21..end
//	21 attributes           int16  bits 0-2 codec (0 none, 1 gzip, 2 snappy,
//	                               3 lz4, 4 zstd), bit 3 LogAppendTime,
//	                               bit 4 transactional, bit 5 control
//	23 lastOffsetDelta      int32  recordCount-1
//	27 baseTimestamp        int64
//	35 maxTimestamp         int64
//	43 producerId           int64  -1 when not idempotent
//	51 producerEpoch        int16
//	53 baseSequence         int32
//	57 recordCount          int32
//	61 records              (compressed as a whole when codec != 0)
//
// Each record (after decompression) is: varint length (of the rest), int8
// attributes, varlong timestampDelta, varint offsetDelta, varint keyLength
// (-1 = null) and key, varint valueLength (-1 = null) and value, varint
// headerCount, then per header varint keyLength and key, varint valueLength
// (-1 = null) and value. Varints are zigzag encoded, at most 5 bytes (varint)
// or 10 bytes (varlong).
//
// The CRC does not cover baseOffset, batchLength, partitionLeaderEpoch or
// magic, so Append can assign offsets and the leader epoch without
// recomputing it.
const (
	batchBaseOffsetPos      = 0
	batchLengthPos          = 8
	batchLeaderEpochPos     = 12
	batchMagicPos           = 16
	batchCRCPos             = 17
	batchAttributesPos      = 21
	batchLastOffsetDeltaPos = 23
	batchBaseTimestampPos   = 27
	batchMaxTimestampPos    = 35
	batchProducerIDPos      = 43
	batchProducerEpochPos   = 51
	batchBaseSequencePos    = 53
	batchRecordCountPos     = 57

	// BatchHeaderSize is the size of a v2 record batch header.
	BatchHeaderSize = 61
	// batchLengthOverhead is the bytes not counted in batchLength.
	batchLengthOverhead = 12
	// batchMinLength is the smallest valid batchLength (a header, no records).
	batchMinLength = BatchHeaderSize - batchLengthOverhead

	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// Compression codecs, the low three bits of the batch attributes.
const (
	CodecNone   int8 = 0
	CodecGzip   int8 = 1
	CodecSnappy int8 = 2
	CodecLZ4    int8 = 3
	CodecZstd   int8 = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded 61-byte header of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the total size of the batch in bytes, header included.
func (h BatchHeader) Size() int64 { return int64(h.Length) + batchLengthOverhead }

// LastOffset is the offset of the last record in the batch.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Codec is the compression codec (CodecNone ... CodecZstd).
func (h BatchHeader) Codec() int8 { return int8(h.Attributes & attrCodecMask) }

// LogAppendTime reports whether the batch's timestamps were set by the broker.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records (transaction markers).
func (h BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// LastSequence is the sequence number of the last record, wrapping from
// MaxInt32 to 0 as Kafka does. It is meaningless when BaseSequence < 0.
func (h BatchHeader) LastSequence() int32 { return incSequence(h.BaseSequence, h.LastOffsetDelta) }

// incSequence adds delta to a producer sequence number, wrapping to 0 after
// MaxInt32.
func incSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// ParseBatchHeader decodes the header at the start of b without checking the
// CRC or the records. It returns ErrUnsupportedMagic when the magic byte is not
// 2 and ErrCorruptBatch when b is shorter than a header.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) > batchMagicPos && int8(b[batchMagicPos]) != 2 {
		return BatchHeader{}, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, int8(b[batchMagicPos]))
	}
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, shorter than a batch header", ErrCorruptBatch, len(b))
	}
	return parseHeader(b), nil
}

// parseHeader decodes b[:61] without checks.
func parseHeader(b []byte) BatchHeader {
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[batchBaseOffsetPos:])),
		Length:               int32(be.Uint32(b[batchLengthPos:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[batchLeaderEpochPos:])),
		Magic:                int8(b[batchMagicPos]),
		CRC:                  be.Uint32(b[batchCRCPos:]),
		Attributes:           int16(be.Uint16(b[batchAttributesPos:])),
		LastOffsetDelta:      int32(be.Uint32(b[batchLastOffsetDeltaPos:])),
		BaseTimestamp:        int64(be.Uint64(b[batchBaseTimestampPos:])),
		MaxTimestamp:         int64(be.Uint64(b[batchMaxTimestampPos:])),
		ProducerID:           int64(be.Uint64(b[batchProducerIDPos:])),
		ProducerEpoch:        int16(be.Uint16(b[batchProducerEpochPos:])),
		BaseSequence:         int32(be.Uint32(b[batchBaseSequencePos:])),
		RecordCount:          int32(be.Uint32(b[batchRecordCountPos:])),
	}
}

// ValidateBatch checks that b is exactly one well-formed v2 record batch and
// returns its header. It checks, in order: the magic byte (ErrUnsupportedMagic),
// that batchLength matches len(b) exactly and the CRC (ErrCorruptBatch), then
// recordCount >= 1, lastOffsetDelta == recordCount-1 and the codec
// (ErrInvalidRecord). For uncompressed batches it also walks every record:
// each must fit in the batch with well-formed varints, carry offsetDelta equal
// to its index, and the batch must hold exactly recordCount records
// (ErrInvalidRecord). It never panics and allocates nothing beyond the error.
func ValidateBatch(b []byte) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if h.Length < batchMinLength || int64(h.Length)+batchLengthOverhead != int64(len(b)) {
		return BatchHeader{}, fmt.Errorf("%w: batchLength %d does not match %d bytes", ErrCorruptBatch, h.Length, len(b))
	}
	if crc := crc32.Checksum(b[batchAttributesPos:], castagnoli); crc != h.CRC {
		return BatchHeader{}, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptBatch, h.CRC, crc)
	}
	if h.RecordCount < 1 {
		return BatchHeader{}, fmt.Errorf("%w: recordCount %d", ErrInvalidRecord, h.RecordCount)
	}
	if h.LastOffsetDelta != h.RecordCount-1 {
		return BatchHeader{}, fmt.Errorf("%w: lastOffsetDelta %d with recordCount %d", ErrInvalidRecord, h.LastOffsetDelta, h.RecordCount)
	}
	switch h.Codec() {
	case CodecNone:
		it := recordIter{b: b[BatchHeaderSize:], count: h.RecordCount}
		for {
			r, ok, err := it.next()
			if err != nil {
				return BatchHeader{}, err
			}
			if !ok {
				break
			}
			if r.offsetDelta != r.index {
				return BatchHeader{}, fmt.Errorf("%w: record %d has offsetDelta %d", ErrInvalidRecord, r.index, r.offsetDelta)
			}
		}
	case CodecGzip, CodecSnappy, CodecLZ4, CodecZstd:
	default:
		return BatchHeader{}, fmt.Errorf("%w: unknown compression codec %d", ErrInvalidRecord, h.Codec())
	}
	return h, nil
}

// ValidateReplicatedBatch checks a batch copied from a partition leader:
// framing and CRC-32C as ValidateBatch, but with the leeway a log the
// cleaner has compacted needs: fewer records than the offsets the batch
// spans (recordCount <= lastOffsetDelta+1, zero for a batch kept only for
// its producer state), with gaps between their offset deltas.
//
// Errors: ErrUnsupportedMagic, ErrCorruptBatch, ErrInvalidRecord.
func ValidateReplicatedBatch(b []byte) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if h.Length < batchMinLength || int64(h.Length)+batchLengthOverhead != int64(len(b)) {
		return BatchHeader{}, fmt.Errorf("%w: batchLength %d does not match %d bytes", ErrCorruptBatch, h.Length, len(b))
	}
	if crc := crc32.Checksum(b[batchAttributesPos:], castagnoli); crc != h.CRC {
		return BatchHeader{}, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptBatch, h.CRC, crc)
	}
	if h.RecordCount < 0 || h.LastOffsetDelta < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return BatchHeader{}, fmt.Errorf("%w: recordCount %d with lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	}
	switch h.Codec() {
	case CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd:
	default:
		return BatchHeader{}, fmt.Errorf("%w: unknown compression codec %d", ErrInvalidRecord, h.Codec())
	}
	return h, nil
}

// recordMeta is what the log needs to know about one record.
type recordMeta struct {
	index          int32 // position in the batch
	offsetDelta    int32
	timestampDelta int64
}

// recordIter walks the uncompressed records of a batch, checking that each
// record's fields fit in its length and that exactly count records fill b.
type recordIter struct {
	b     []byte
	count int32
	index int32
}

// next returns the next record; ok is false after the last one. It returns
// ErrInvalidRecord when the records do not parse or do not fill b exactly.
func (it *recordIter) next() (r recordMeta, ok bool, err error) {
	if it.index >= it.count {
		if len(it.b) != 0 {
			return r, false, fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(it.b), it.count)
		}
		return r, false, nil
	}
	bad := func(what string) error {
		return fmt.Errorf("%w: record %d: %s", ErrInvalidRecord, it.index, what)
	}
	length, n := varint32(it.b)
	if n <= 0 {
		if len(it.b) == 0 {
			return r, false, fmt.Errorf("%w: batch claims %d records, holds %d", ErrInvalidRecord, it.count, it.index)
		}
		return r, false, bad("bad length varint")
	}
	if length < 0 || int64(length) > int64(len(it.b)-n) {
		return r, false, bad("length does not fit the batch")
	}
	body := it.b[n : n+int(length)]
	it.b = it.b[n+int(length):]
	if len(body) < 1 {
		return r, false, bad("empty record")
	}
	body = body[1:] // attributes
	r.index = it.index
	if r.timestampDelta, n = binary.Varint(body); n <= 0 {
		return r, false, bad("bad timestampDelta")
	}
	body = body[n:]
	if r.offsetDelta, n = varint32(body); n <= 0 {
		return r, false, bad("bad offsetDelta")
	}
	body = body[n:]
	if body, err = skipBytes(body, true); err != nil {
		return r, false, bad("key: " + err.Error())
	}
	if body, err = skipBytes(body, true); err != nil {
		return r, false, bad("value: " + err.Error())
	}
	headers, n := varint32(body)
	if n <= 0 || headers < 0 {
		return r, false, bad("bad header count")
	}
	body = body[n:]
	for i := int32(0); i < headers; i++ {
		if body, err = skipBytes(body, false); err != nil {
			return r, false, bad("header key: " + err.Error())
		}
		if body, err = skipBytes(body, true); err != nil {
			return r, false, bad("header value: " + err.Error())
		}
	}
	if len(body) != 0 {
		return r, false, bad("length larger than its fields")
	}
	it.index++
	return r, true, nil
}

type recordErr string

func (e recordErr) Error() string { return string(e) }

// skipBytes skips a varint length and that many bytes; -1 (null) is accepted
// when nullable.
func skipBytes(b []byte, nullable bool) ([]byte, error) {
	l, n := varint32(b)
	if n <= 0 {
		return nil, recordErr("bad length varint")
	}
	b = b[n:]
	if l == -1 && nullable {
		return b, nil
	}
	if l < 0 || int64(l) > int64(len(b)) {
		return nil, recordErr("length does not fit")
	}
	return b[l:], nil
}

// varint32 decodes a zigzag varint of at most 5 bytes that fits an int32.
// n <= 0 means malformed or truncated.
func varint32(b []byte) (int32, int) {
	if len(b) > 5 {
		b = b[:5]
	}
	v, n := binary.Varint(b)
	if n <= 0 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, -1
	}
	return int32(v), n
}

// setBatchOffsetAndEpoch rewrites baseOffset and partitionLeaderEpoch, both
// outside the CRC.
func setBatchOffsetAndEpoch(b []byte, baseOffset int64, epoch int32) {
	binary.BigEndian.PutUint64(b[batchBaseOffsetPos:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[batchLeaderEpochPos:], uint32(epoch))
}

// setLogAppendTime sets the LogAppendTime attribute and maxTimestamp and
// recomputes the CRC.
func setLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[batchAttributesPos:]) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[batchAttributesPos:], attrs)
	binary.BigEndian.PutUint64(b[batchMaxTimestampPos:], uint64(ts))
	binary.BigEndian.PutUint32(b[batchCRCPos:], crc32.Checksum(b[batchAttributesPos:], castagnoli))
}

// findRecordByTimestamp returns the offset and timestamp of the first record
// in the batch b (a whole batch, CRC already trusted) with offset >= minOffset
// and timestamp >= ts. For a compressed batch it decompresses with decompress,
// or, when that is nil, answers at batch granularity: the batch's first offset
// >= minOffset and its maxTimestamp. found is false when no record matches.
func findRecordByTimestamp(b []byte, ts, minOffset int64, decompress func(int8, []byte) ([]byte, error)) (offset, timestamp int64, found bool, err error) {
	h := parseHeader(b)
	if h.LogAppendTime() {
		// Every record carries the batch's maxTimestamp.
		if h.MaxTimestamp < ts || h.LastOffset() < minOffset {
			return 0, 0, false, nil
		}
		return max(h.BaseOffset, minOffset), h.MaxTimestamp, true, nil
	}
	records := b[BatchHeaderSize:]
	if h.Codec() != CodecNone {
		if decompress == nil {
			if h.MaxTimestamp < ts || h.LastOffset() < minOffset {
				return 0, 0, false, nil
			}
			return max(h.BaseOffset, minOffset), h.MaxTimestamp, true, nil
		}
		if records, err = decompress(h.Codec(), records); err != nil {
			return 0, 0, false, fmt.Errorf("%w: decompress: %v", ErrCorruptBatch, err)
		}
	}
	it := recordIter{b: records, count: h.RecordCount}
	for {
		r, ok, err := it.next()
		if err != nil || !ok {
			return 0, 0, false, err
		}
		off, t := h.BaseOffset+int64(r.offsetDelta), h.BaseTimestamp+r.timestampDelta
		if off >= minOffset && t >= ts {
			return off, t, true, nil
		}
	}
}
