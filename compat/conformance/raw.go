package conformance

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is one TCP connection speaking the Kafka protocol with exactly the
// versions the caller sets: no negotiation, no retries, so both brokers see
// byte-identical requests.
type rawConn struct {
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

const ioTimeout = 30 * time.Second

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, r: bufio.NewReader(c)}, nil
}

func (rc *rawConn) close() { rc.c.Close() }

// do sends req at req.GetVersion() and parses the answer into a response of
// the same version. A Produce with acks 0 has no answer: nil, nil.
func (rc *rawConn) do(req kmsg.Request) (kmsg.Response, error) {
	rc.corr++
	corr := rc.corr
	body := make([]byte, 4, 256)
	body = binary.BigEndian.AppendUint16(body, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	client := "gregor-conformance"
	body = binary.BigEndian.AppendUint16(body, uint16(len(client)))
	body = append(body, client...)
	if req.IsFlexible() {
		body = append(body, 0) // no header tags
	}
	body = req.AppendTo(body)
	binary.BigEndian.PutUint32(body, uint32(len(body)-4))
	rc.c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := rc.c.Write(body); err != nil {
		return nil, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	var sz [4]byte
	if _, err := io.ReadFull(rc.r, sz[:]); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("answer size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc.r, buf); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	buf = buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// An ApiVersions of a version the broker does not know is answered at
	// v0 (UNSUPPORTED_VERSION and the ranges): parse it so.
	if req.Key() == kmsg.ApiVersions.Int16() && req.GetVersion() > req.MaxVersion() {
		resp.SetVersion(0)
		err := resp.ReadFrom(buf)
		return resp, err
	}
	// ApiVersions answers always have a v0 header (no tags).
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(buf) < 1 || buf[0] != 0 {
			return nil, fmt.Errorf("response header tags not empty")
		}
		buf = buf[1:]
	}
	if err := resp.ReadFrom(buf); err != nil {
		// An ApiVersions of an unsupported version is answered at v0.
		if req.Key() == kmsg.ApiVersions.Int16() {
			resp.SetVersion(0)
			if err0 := resp.ReadFrom(buf); err0 == nil {
				return resp, nil
			}
		}
		return nil, fmt.Errorf("parsing the v%d answer: %w", req.GetVersion(), err)
	}
	return resp, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rec is one record of a hand-built batch.
type rec struct {
	key, value []byte
	headers    []kmsg.Header
	tsDelta    int64
}

// batchOpts are the batch header fields a scenario varies.
type batchOpts struct {
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	transactional bool
	timestamp     int64 // base timestamp; 0: baseTS
	corruptCRC    bool
}

// baseTS is the CreateTime of hand-built batches (2020-09-13); reports keep
// timestamps before nowTS and replace later ones by "<now>".
const baseTS int64 = 1_600_000_000_000

func plainOpts() batchOpts { return batchOpts{producerID: -1, producerEpoch: -1, baseSequence: -1} }

// batch encodes an uncompressed magic-2 record batch at base offset 0.
func batch(o batchOpts, recs ...rec) []byte {
	ts := o.timestamp
	if ts == 0 {
		ts = baseTS
	}
	var records []byte
	var maxDelta int64
	for i, r := range recs {
		kr := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: r.tsDelta, Key: r.key, Value: r.value, Headers: r.headers}
		body := kr.AppendTo(nil)
		kr.Length = int32(len(body) - 1)
		records = kr.AppendTo(records)
		if r.tsDelta > maxDelta {
			maxDelta = r.tsDelta
		}
	}
	var attrs int16
	if o.transactional {
		attrs |= 0x10
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + maxDelta,
		ProducerID:           o.producerID,
		ProducerEpoch:        o.producerEpoch,
		FirstSequence:        o.baseSequence,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	crc := crc32.Checksum(out[21:], castagnoli)
	if o.corruptCRC {
		crc ^= 0xdeadbeef
	}
	binary.BigEndian.PutUint32(out[17:], crc)
	return out
}

// vals is n records with key k and values prefix0..prefix(n-1).
func vals(prefix string, n int) []rec {
	var rs []rec
	for i := 0; i < n; i++ {
		rs = append(rs, rec{key: []byte("k"), value: fmt.Appendf(nil, "%s%d", prefix, i), tsDelta: int64(i)})
	}
	return rs
}

// batchView is what a report shows of a fetched batch.
type batchView struct {
	BaseOffset      int64
	LastOffsetDelta int32
	Attributes      string
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	Records         []recordView
	Control         string `json:",omitempty"`
	Error           string `json:",omitempty"`
}

type recordView struct {
	Offset    int64
	Timestamp int64
	Key       *string
	Value     *string
	Headers   []string `json:",omitempty"`
}

// viewBatches decodes a Fetch partition's record bytes (uncompressed magic
// 2; anything else is shown by its header only).
func viewBatches(b []byte) []batchView {
	var out []batchView
	for len(b) >= 12 {
		n := int(int32(binary.BigEndian.Uint32(b[8:]))) + 12
		if n < 61 || n > len(b) {
			break
		}
		var rb kmsg.RecordBatch
		v := batchView{}
		if err := rb.ReadFrom(b[:n]); err != nil {
			v.Error = err.Error()
			out = append(out, v)
			break
		}
		v = batchView{BaseOffset: rb.FirstOffset, LastOffsetDelta: rb.LastOffsetDelta,
			ProducerID: rb.ProducerID, ProducerEpoch: rb.ProducerEpoch, BaseSequence: rb.FirstSequence,
			FirstTimestamp: rb.FirstTimestamp, MaxTimestamp: rb.MaxTimestamp}
		v.Attributes = fmt.Sprintf("codec=%d logAppendTime=%v txn=%v control=%v", rb.Attributes&7, rb.Attributes&8 != 0, rb.Attributes&0x10 != 0, rb.Attributes&0x20 != 0)
		if crc32.Checksum(b[21:n], castagnoli) != uint32(rb.CRC) {
			v.Error = "bad CRC"
		}
		if rb.Attributes&7 == 0 {
			recs := rb.Records
			for i := int32(0); i < rb.NumRecords && len(recs) > 0; i++ {
				var r kmsg.Record
				l, used := binary.Varint(recs)
				if used <= 0 || int(l)+used > len(recs) {
					v.Error = "bad record length"
					break
				}
				if err := r.ReadFrom(recs[:used+int(l)]); err != nil {
					v.Error = err.Error()
					break
				}
				recs = recs[used+int(l):]
				if rb.Attributes&0x20 != 0 {
					var cr kmsg.ControlRecordKey
					if err := cr.ReadFrom(r.Key); err == nil {
						v.Control = fmt.Sprintf("type=%d", cr.Type)
					}
					continue
				}
				rv := recordView{Offset: rb.FirstOffset + int64(r.OffsetDelta), Timestamp: rb.FirstTimestamp + r.TimestampDelta64}
				if r.Key != nil {
					s := string(r.Key)
					rv.Key = &s
				}
				if r.Value != nil {
					s := string(r.Value)
					rv.Value = &s
				}
				for _, h := range r.Headers {
					rv.Headers = append(rv.Headers, h.Key+"="+string(h.Value))
				}
				v.Records = append(v.Records, rv)
			}
		}
		out = append(out, v)
		b = b[n:]
	}
	return out
}
