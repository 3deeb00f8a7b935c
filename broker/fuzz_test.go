package broker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeFrame builds a request frame (without its size prefix) the way a
// client does: header v1, or v2 for flexible versions.
func encodeFrame(req kmsg.Request, corr int32) []byte {
	return fuzzFormatter.AppendRequest(nil, req, corr)[4:]
}

var fuzzFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))

// seedFrames adds, for every handled key, a default request at its lowest
// and highest served version, and one naming a topic where it has topics.
func seedFrames(f *testing.F) {
	for _, h := range advertisedKeys() {
		for _, v := range []int16{h.acceptMin, h.max} {
			req := kmsg.RequestForKey(int16(h.key))
			req.SetVersion(v)
			f.Add(encodeFrame(req, 1))
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("fuzz")}}
	f.Add(encodeFrame(md, 2))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 11
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "fuzz", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 3, PartitionMaxBytes: 100}}}}
	f.Add(encodeFrame(fetch, 3))
	prod := produceReq("fuzz", 0, makeBatch([]string{"a", "b"}, -1, -1, -1))
	f.Add(encodeFrame(prod, 4))
}

// FuzzDecodeRequest feeds arbitrary frames to the request decoder.
//
// Invariants: never panics; a frame it accepts names a handled key at a
// served version and decodes to a non-nil request of that key.
func FuzzDecodeRequest(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, hdr, msg, err := decodeRequest(frame)
		if err != nil {
			return
		}
		if msg == nil || msg.Key() != hdr.Key || hdr.Version < h.acceptMin || hdr.Version > h.max {
			t.Fatalf("accepted key %d v%d (served %d-%d) msg %v", hdr.Key, hdr.Version, h.acceptMin, h.max, msg)
		}
	})
}

// FuzzHandlers runs every decodable fuzzed request through its handler on
// a live broker (a topic "fuzz" with 2 partitions and some records).
//
// Invariants: no handler panics on any request that decodes; a handler
// either answers or asks to close the connection, within its time bound.
func FuzzHandlers(f *testing.F) {
	seedFrames(f)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := New(Config{Listen: "127.0.0.1:0", DataDir: f.TempDir(), Logger: log,
		Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	if _, err := b.createTopic("fuzz", 2, nil); err != nil {
		f.Fatal(err)
	}
	p := b.lookupTopic("fuzz").partitions[0]
	for i := 0; i < 3; i++ {
		if _, err := p.log.Append(makeBatch([]string{"x", "y"}, -1, -1, -1), storageOpts()); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, hdr, msg, err := decodeRequest(frame)
		if err != nil {
			return
		}
		// Keep the topic set small: creating topics from fuzz input would
		// fill the disk.
		switch hdr.Key {
		case int16(kmsg.CreateTopics), int16(kmsg.CreatePartitions), int16(kmsg.DeleteTopics), int16(kmsg.DeleteRecords), int16(kmsg.Metadata):
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		local, remote := net.Pipe()
		defer local.Close()
		defer remote.Close()
		c := &conn{b: b, nc: local, ctx: ctx, cancel: cancel}
		r := &request{conn: c, hdr: hdr, msg: msg, ctx: ctx}
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("%s v%d panicked: %v", kmsg.NameForKey(hdr.Key), hdr.Version, v)
			}
		}()
		resp, err := h.fn(b, r)
		if r.release != nil {
			r.release()
		}
		if err == nil && resp == nil && r.out == nil && !r.noResponse {
			t.Fatalf("%s v%d: no response and no error", kmsg.NameForKey(hdr.Key), hdr.Version)
		}
	})
}
