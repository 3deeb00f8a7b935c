package protocol

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEncodeFetchResponse_MatchesKmsg checks, for every Fetch version, that
// the region-aware encoder produces exactly the bytes kmsg produces when the
// records are in memory; EncodeFetchResponseInto gives the same bytes into
// one Out reused across versions and shapes.
func TestEncodeFetchResponse_MatchesKmsg(t *testing.T) {
	dir := t.TempDir()
	recs := bytes.Repeat([]byte("0123456789abcdef"), 100)
	f, err := os.Create(filepath.Join(dir, "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append([]byte("junk"), recs...)); err != nil {
		t.Fatal(err)
	}
	rack := "r1"
	var reused Out
	for version := int16(4); version <= 18; version++ {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		resp.ThrottleMillis = 7
		resp.SessionID = 0
		for ti, name := range []string{"a", "topic-b"} {
			tp := kmsg.NewFetchResponseTopic()
			tp.Topic = name
			tp.TopicID[0] = byte(ti + 1)
			for p := int32(0); p < 3; p++ {
				pp := kmsg.NewFetchResponseTopicPartition()
				pp.Partition = p
				pp.HighWatermark = 100 + int64(p)
				pp.LastStableOffset = 90
				pp.LogStartOffset = 3
				if p == 1 {
					pp.ErrorCode = 1
					pp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 6}}
				}
				if p == 2 && ti == 1 {
					pp.CurrentLeader.LeaderID = 0
					pp.CurrentLeader.LeaderEpoch = 4
				}
				tp.Partitions = append(tp.Partitions, pp)
			}
			resp.Topics = append(resp.Topics, tp)
		}
		if version >= 16 {
			resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 0, Host: "127.0.0.1", Port: 9092, Rack: &rack}}
		}
		// Region-backed encoding: partition 0 of each topic from the file,
		// and partition 2 in even versions.
		fromFile := func(ti, pi int) bool { return pi == 0 || pi == 2 && version%2 == 0 }
		records := func(ti, pi int) (Region, bool) {
			if fromFile(ti, pi) {
				return Region{File: f, Pos: 4, Size: int64(len(recs))}, true
			}
			return Region{}, false
		}
		out := EncodeFetchResponse(42, resp, records)
		got, err := out.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		EncodeFetchResponseInto(&reused, 42, resp, records)
		if again, err := reused.Bytes(); err != nil || !bytes.Equal(again, got) {
			t.Fatalf("v%d: into a reused Out: %v\n got %x\nwant %x", version, err, again, got)
		}
		// Reference: same response with records in memory, through kmsg.
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if fromFile(i, j) {
					resp.Topics[i].Partitions[j].RecordBatches = recs
				}
			}
		}
		want := EncodeResponse(42, resp)
		wantBytes, _ := want.Bytes()
		if version%3 == 0 { // a plain frame between two fetch frames in the reused Out
			EncodeResponseInto(&reused, nil, 42, resp)
			if b, _ := reused.Bytes(); !bytes.Equal(b, wantBytes) {
				t.Fatalf("v%d: EncodeResponseInto a reused Out differs", version)
			}
		}
		if !bytes.Equal(got, wantBytes) {
			t.Fatalf("v%d: encoding differs from kmsg\n got %x\nwant %x", version, got, wantBytes)
		}
		// And kmsg can decode it back.
		dec := kmsg.NewPtrFetchResponse()
		dec.Version = version
		hdr := 4 + 4
		if version >= 12 {
			hdr++
		}
		if err := dec.ReadFrom(got[hdr:]); err != nil {
			t.Fatalf("v%d: decode: %v", version, err)
		}
		if !bytes.Equal(dec.Topics[1].Partitions[0].RecordBatches, recs) {
			t.Fatalf("v%d: records round trip failed", version)
		}
	}
}

// WriteToWriter (the TLS path) writes the same frame as WriteTo, reading
// the file regions instead of sending them with sendfile.
func TestOut_WriteToWriterCopiesRegions(t *testing.T) {
	dir := t.TempDir()
	payload := bytes.Repeat([]byte("0123456789"), 100_000)
	f, err := os.Create(filepath.Join(dir, "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(payload)
	out := NewOut([]byte{0, 0, 0, 0, 'h', 'i'})
	out.AppendRegion(Region{File: f, Pos: 5, Size: 500_000})
	out.AppendBytes([]byte("end"))
	before := sendfileBytes.Load()
	var buf bytes.Buffer
	w := bufio.NewWriterSize(&buf, 64<<10)
	n, err := out.WriteToWriter(w)
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	want, _ := out.Bytes()
	if n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("wrote %d bytes, want the %d of Bytes", n, len(want))
	}
	if sendfileBytes.Load() != before {
		t.Fatal("sendfile used by WriteToWriter")
	}
	// A region past the end of its file fails instead of sending short.
	short := NewOut([]byte{0, 0, 0, 0})
	short.AppendRegion(Region{File: f, Pos: int64(len(payload)) - 10, Size: 100})
	if _, err := short.WriteToWriter(io.Discard); err == nil {
		t.Fatal("a region beyond the file was written")
	}
}
