package admin

// Record browsing and search: GET /topics/{topic}/{partition} (and
// /topics/{topic}/records?partition=N, the topic page's form).
//
// # Query
//
//	order=newest|oldest   newest first (the default) or oldest first
//	offset=N              newest first: the newest offset shown (default
//	                      the last record); oldest first: the first
//	                      (default the log start)
//	timestamp=T           instead of offset, ms or RFC 3339: newest first,
//	                      the records at or before T; oldest first, at or
//	                      after T (ListOffsets by timestamp, as a consumer's
//	                      offsetsForTimes)
//	q=TEXT                only records whose key or value contains TEXT
//	header=NAME[=TEXT]    only records with a header NAME (whose value
//	                      contains TEXT)
//	limit=N               records shown (50, at most 500)
//	format=hex            keys, values and headers in hex
//
// # Bounds
//
// One request scans at most Options.ScanRecords records and
// Options.ScanBytes bytes of keys, values and headers (the first record
// is always scanned, however large); the page says how much it scanned
// and, when a bound stopped it, links to the offset to go on from.
// Records are read from this broker's replica of the partition through
// broker.ReadRecords (the log's read path, below the high watermark,
// control records skipped).
//
// # Rendering
//
// A key or value is shown as pretty-printed JSON when it is a JSON object
// or array, as text when it is printable UTF-8, as hex otherwise. One in
// the Confluent Schema Registry wire format (magic byte 0, a 4-byte
// big-endian schema id, then the payload) is labelled with its schema id
// and, when this broker serves the registry, decoded through it
// (schemaregistry.Registry.Decode: Avro binary into Avro's JSON encoding,
// a JSON Schema value as its JSON, Protobuf after its message indexes
// through protojson), shown pretty-printed with the schema's type and a
// subject that carries the id (the topic's own, <topic>-key or
// <topic>-value, when it does). A value whose id is unknown or that does
// not decode is rendered by the rules above with the reason. Only the
// records shown are decoded (at most limit), each id's unknown or
// unreadable schema asked once a page; the registry keeps the parsed
// schemas by id. Headers are not decoded; q matches the raw bytes, not
// the decoded JSON; format=hex shows everything raw.
//
// # Authorization
//
// Besides DESCRIBE on the CLUSTER (every page), READ on the TOPIC, as a
// consumer needs.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gregor-broker/gregor/broker"
)

// Defaults of the browse bounds.
const (
	DefaultScanRecords = 10000   // records scanned per request
	DefaultScanBytes   = 8 << 20 // bytes of keys, values and headers scanned per request

	defaultBrowseLimit = 50
	maxBrowseLimit     = 500
	browseChunk        = 200 // records read per step, newest first
)

// shownBytes is a key or value as the page shows it.
type shownBytes struct {
	Kind   string // "null", "text", "json", "hex"; "decoded" through the schema registry
	Wire   bool   // Confluent wire format: Schema is its schema id
	Schema uint32
	Text   string
	// Decoded (Kind "decoded"): the schema's type, the Protobuf message,
	// the subject shown and how many others carry the id.
	SchemaType, Message string
	Subject             string
	MoreSubjects        int
	// Why a wire-format value was not decoded ("" when it was, or when
	// there is no registry to decode it).
	Why string
}

// renderBytes decides how b is shown (see the package comment of browse.go).
func renderBytes(b []byte, hex bool) shownBytes {
	if b == nil {
		return shownBytes{Kind: "null", Text: "null"}
	}
	if hex {
		return shownBytes{Kind: "hex", Text: hexText(b)}
	}
	if len(b) >= 5 && b[0] == 0 {
		s := renderPlain(b[5:])
		s.Wire, s.Schema = true, binary.BigEndian.Uint32(b[1:5])
		return s
	}
	return renderPlain(b)
}

func renderPlain(b []byte) shownBytes {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(b) {
		var out bytes.Buffer
		if json.Indent(&out, bytes.TrimSpace(b), "", "  ") == nil {
			return shownBytes{Kind: "json", Text: out.String()}
		}
	}
	if utf8.Valid(b) && printable(string(b)) {
		return shownBytes{Kind: "text", Text: string(b)}
	}
	return shownBytes{Kind: "hex", Text: hexText(b)}
}

func hexText(b []byte) string { return fmt.Sprintf("% x", b) }

// recordFilter is the q and header parameters.
type recordFilter struct {
	Text       string // in the key or value
	Header     string // a header of that name
	HeaderText string // whose value contains this
	HasHeader  bool
}

func parseFilter(q, header string) recordFilter {
	f := recordFilter{Text: q}
	if header != "" {
		f.HasHeader = true
		f.Header, f.HeaderText, _ = strings.Cut(header, "=")
	}
	return f
}

func (f recordFilter) on() bool { return f.Text != "" || f.HasHeader }

func (f recordFilter) match(r broker.Record) bool {
	if f.Text != "" && !bytes.Contains(r.Key, []byte(f.Text)) && !bytes.Contains(r.Value, []byte(f.Text)) {
		return false
	}
	if f.HasHeader {
		for _, h := range r.Headers {
			if h.Key == f.Header && bytes.Contains(h.Value, []byte(f.HeaderText)) {
				return true
			}
		}
		return false
	}
	return true
}

// recordBytes is what a record counts against the scan's byte bound.
func recordBytes(r broker.Record) int64 {
	n := int64(len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		n += int64(len(h.Key) + len(h.Value))
	}
	return n
}

// scanBudget counts a scan against its bounds.
type scanBudget struct {
	maxRecords int
	maxBytes   int64
	records    int
	bytes      int64
	stopped    bool // a bound stopped the scan
}

// take counts r, or reports (and remembers) that a bound stops the scan
// before it.
func (s *scanBudget) take(r broker.Record) bool {
	n := recordBytes(r)
	if s.records >= s.maxRecords || s.records > 0 && s.bytes+n > s.maxBytes {
		s.stopped = true
		return false
	}
	s.records++
	s.bytes += n
	return true
}

// shownRecord is a record as the page shows it.
type shownRecord struct {
	broker.Record
	Key, Value shownBytes
	Headers    []shownHeader
}

type shownHeader struct {
	Key   string
	Value shownBytes
}

// browsePage is records.html's data.
type browsePage struct {
	Topic                   string
	Partition               int32
	Partitions              []int32
	Newest                  bool
	Offset, Timestamp       string // as asked
	Q, Header               string
	Limit                   int
	Hex                     bool
	Records                 []shownRecord
	LogStart, HighWatermark int64
	From                    int64 // the offset the scan started at (-1: nothing to scan)
	Scanned                 int
	ScannedBytes            int64
	First, Last             int64 // offsets scanned: the first and the last (in scan order)
	MaxRecords              int
	MaxBytes                int64
	Stopped                 bool  // a scan bound stopped it
	More                    bool  // records remain past the last scanned
	Next                    int64 // where to go on from
	Filtered                bool
	Err                     string
}

// browseRecords serves the records page of r's topic and partition.
func (s *Server) browseRecords(w http.ResponseWriter, r *http.Request, partition string) {
	c := callerOf(r)
	topic := r.PathValue("topic")
	p, err := strconv.ParseInt(partition, 10, 32)
	if err != nil || p < 0 {
		http.Error(w, "bad partition", http.StatusBadRequest)
		return
	}
	if !s.allowed(c, broker.ACLRead, broker.ResourceTopic, topic) {
		s.deny(w, c, "READ on topic "+topic)
		return
	}
	var info *broker.TopicInfo
	ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
	topics, _ := s.b.ClusterTopics(ctx) // every partition, from any node
	cancel()
	for _, t := range topics {
		if t.Name == topic {
			info = &t
			break
		}
	}
	// The partitions with a replica here, by number (in a cluster they
	// need not be all, nor at their index).
	var part *broker.PartitionInfo
	if info != nil {
		for i := range info.Partitions {
			if info.Partitions[i].Partition == int32(p) {
				part = &info.Partitions[i]
			}
		}
	}
	if part == nil {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	v := browsePage{Topic: topic, Partition: int32(p), Newest: q.Get("order") != "oldest", Offset: q.Get("offset"), Timestamp: q.Get("timestamp"),
		Q: q.Get("q"), Header: q.Get("header"), Hex: q.Get("format") == "hex", Limit: defaultBrowseLimit,
		LogStart: part.LogStartOffset, HighWatermark: part.HighWatermark,
		MaxRecords: s.scanRecords, MaxBytes: s.scanBytes, From: -1, First: -1, Last: -1}
	for _, ip := range info.Partitions {
		v.Partitions = append(v.Partitions, ip.Partition)
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		v.Limit = min(n, maxBrowseLimit)
	}
	f := parseFilter(v.Q, v.Header)
	v.Filtered = f.on()
	recs, err := s.scan(r.Context(), c, &v, f)
	if errors.Is(err, broker.ErrUnknownPartition) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		v.Err = err.Error()
	}
	var dec *decoder
	if !v.Hex {
		dec = s.newDecoder(r.Context(), topic)
	}
	for _, rec := range recs {
		sr := shownRecord{Record: rec, Key: dec.render(rec.Key, "key", v.Hex), Value: dec.render(rec.Value, "value", v.Hex)}
		for _, h := range rec.Headers {
			sr.Headers = append(sr.Headers, shownHeader{Key: h.Key, Value: renderBytes(h.Value, v.Hex)})
		}
		v.Records = append(v.Records, sr)
	}
	s.renderStatus(w, r, http.StatusOK, "records.html", fmt.Sprintf("%s-%d", topic, p), v)
}

// scan finds the page's records, filling in v's scan fields.
func (s *Server) scan(ctx context.Context, c broker.Caller, v *browsePage, f recordFilter) ([]broker.Record, error) {
	start, err := s.browseStart(ctx, c, v)
	if err != nil {
		return nil, err
	}
	budget := scanBudget{maxRecords: v.MaxRecords, maxBytes: v.MaxBytes}
	var out []broker.Record
	visit := func(r broker.Record) bool { // false: stop
		if !budget.take(r) {
			return false
		}
		if v.First < 0 {
			v.First = r.Offset
		}
		v.Last = r.Offset
		if f.match(r) {
			out = append(out, r)
		}
		return len(out) < v.Limit
	}
	if v.Newest {
		err = s.scanNewest(v, start, &budget, visit)
	} else {
		err = s.scanOldest(v, start, visit)
	}
	v.Scanned, v.ScannedBytes, v.Stopped = budget.records, budget.bytes, budget.stopped
	if v.Newest {
		v.Next = v.Last - 1
		if v.Last < 0 {
			v.Next = start
		}
		v.More = v.Next >= v.LogStart && v.Next >= 0
	} else {
		v.Next = v.Last + 1
		if v.Last < 0 {
			v.Next = start
		}
		v.More = v.Next < v.HighWatermark
	}
	return out, err
}

// browseStart resolves offset or timestamp into the first offset to scan
// (the newest, newest first), clamped to the log; v.From is set to it, or
// left -1 when there is nothing to scan.
func (s *Server) browseStart(ctx context.Context, c broker.Caller, v *browsePage) (int64, error) {
	var start int64
	switch {
	case v.Timestamp != "":
		ts, err := parseResetValue("timestamp", v.Timestamp)
		if err != nil {
			return 0, err
		}
		if v.Newest {
			ts++ // the first record after ts, and back one
		}
		off, err := s.listOffset(ctx, c, v.Topic, v.Partition, ts)
		if err != nil {
			return 0, fmt.Errorf("offset of timestamp %s: %w", v.Timestamp, err)
		}
		switch {
		case off < 0 && v.Newest:
			start = v.HighWatermark - 1 // every record is at or before ts
		case off < 0:
			start = v.HighWatermark // none is at or after ts
		case v.Newest:
			start = off - 1
		default:
			start = off
		}
	case v.Offset != "":
		n, err := strconv.ParseInt(strings.TrimSpace(v.Offset), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("offset %q: want an integer", v.Offset)
		}
		start = n
	case v.Newest:
		start = v.HighWatermark - 1
	default:
		start = v.LogStart
	}
	if v.Newest {
		start = min(start, v.HighWatermark-1)
		if start >= v.LogStart {
			v.From = start
		}
	} else {
		start = max(start, v.LogStart)
		if start < v.HighWatermark {
			v.From = start
		}
	}
	return start, nil
}

// scanOldest visits records from start on until visit says stop.
func (s *Server) scanOldest(v *browsePage, start int64, visit func(broker.Record) bool) error {
	pos := start
	for pos < v.HighWatermark {
		recs, err := s.b.ReadRecords(v.Topic, v.Partition, pos, min(v.MaxRecords, browseChunk))
		for _, r := range recs {
			if !visit(r) {
				return err
			}
			pos = r.Offset + 1
		}
		if err != nil || len(recs) == 0 {
			return err
		}
	}
	return nil
}

// scanNewest visits records from start back to the log start until visit
// says stop, reading windows of browseChunk offsets (smaller when a
// window's records would overrun the byte bound).
func (s *Server) scanNewest(v *browsePage, start int64, budget *scanBudget, visit func(broker.Record) bool) error {
	end := start + 1 // exclusive
	chunk := int64(browseChunk)
	for reads := 0; end > v.LogStart; reads++ {
		if reads > 16+v.MaxRecords/browseChunk*4 { // gaps (compaction) without records
			budget.stopped = true
			return nil
		}
		from := max(end-chunk, v.LogStart)
		window, overran, err := s.readWindow(v, from, end, budget.maxBytes-budget.bytes)
		if err != nil {
			return err
		}
		if overran && chunk > 1 {
			chunk = max(chunk/4, 1)
			continue
		}
		for i := len(window) - 1; i >= 0; i-- {
			if !visit(window[i]) {
				return nil
			}
		}
		end = from
	}
	return nil
}

// readWindow reads the records of offsets [from, end); overran when their
// bytes passed room before the end was reached.
func (s *Server) readWindow(v *browsePage, from, end, room int64) ([]broker.Record, bool, error) {
	var out []broker.Record
	var n int64
	for pos := from; pos < end; {
		recs, err := s.b.ReadRecords(v.Topic, v.Partition, pos, int(end-pos))
		if err != nil {
			return out, false, err
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			if r.Offset >= end {
				return out, false, nil
			}
			out = append(out, r)
			pos = r.Offset + 1
			n += recordBytes(r)
		}
		if n > room && pos < end {
			return out, true, nil
		}
	}
	return out, false, nil
}
