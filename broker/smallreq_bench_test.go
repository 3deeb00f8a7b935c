package broker

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkSmallProduce sends one single-record acks=all Produce at a time on
// a raw connection and waits for its answer: the batch-1 round trip of
// issue #16. Besides ns/op and allocs/op (the whole process: the client
// side here is two syscalls and no allocation) it reports the process's
// CPU time per request, which is what the broker spends on one.
// Run with `go test -run '^$' -bench SmallProduce -benchmem ./broker`.
func BenchmarkSmallProduce(b *testing.B) {
	br, addr := startBroker(b, "", nil)
	if _, err := br.createTopic("small", 1, nil); err != nil {
		b.Fatal(err)
	}
	req := produceReq("small", 0, makeBatch([]string{string(make([]byte, 200))}, -1, -1, -1))
	req.Version = 9
	benchRoundTrips(b, addr, req)
}

// BenchmarkSmallFetch fetches the one 200-byte record at offset 0, one
// Fetch at a time (v11, sessionless), as BenchmarkSmallProduce does.
func BenchmarkSmallFetch(b *testing.B) {
	br, addr := startBroker(b, "", nil)
	if _, err := br.createTopic("small", 1, nil); err != nil {
		b.Fatal(err)
	}
	cl := newClient(b, addr)
	if err := cl.ProduceSync(testCtx(b), &kgo.Record{Topic: "small", Value: make([]byte, 200)}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.ReplicaID, req.SessionEpoch = 11, 500, 1, 1<<20, -1, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "small"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	benchRoundTrips(b, addr, req)
}

// benchRoundTrips sends req on a raw connection one at a time and reports
// ns/op, allocs/op and the process's CPU per request.
func benchRoundTrips(b *testing.B, addr string, req kmsg.Request) {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	resp := make([]byte, 4096)
	roundTrip := func() {
		if _, err := conn.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, resp[:4]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(resp[:4]))
		if n > len(resp) {
			b.Fatalf("response of %d bytes", n)
		}
		if _, err := io.ReadFull(conn, resp[:n]); err != nil {
			b.Fatal(err)
		}
	}
	for range 1000 { // warm the pools and the page cache
		roundTrip()
	}
	cpu0 := processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		roundTrip()
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
}
