// Command small-bench measures the cost of the smallest request: one
// single-record acks=all Produce at a time on one connection, against a
// broker process given by -addr and -pid (its CPU is read from /proc). It
// reports round trips per second, the broker's CPU per request and the
// round-trip latency percentiles, back to back and paced at -rate.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9092", "broker address")
	pid := flag.Int("pid", 0, "broker pid (for its CPU time)")
	n := flag.Int("n", 50000, "requests per phase")
	rate := flag.Int("rate", 10000, "requests per second in the paced phase")
	size := flag.Int("size", 200, "record value bytes")
	e2eOn := flag.Bool("e2e", true, "also a paced phase with a consumer long-polling Fetch on a second connection: produce-to-fetch latency")
	flag.Parse()

	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(*addr))
	if err != nil {
		log.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	topic := "small-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		log.Fatal(err)
	}
	cl.Close()

	conn, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	frame := produceFrame(topic, *size)
	resp := make([]byte, 1<<16)
	rt := func() {
		if _, err := conn.Write(frame); err != nil {
			log.Fatal(err)
		}
		if _, err := io.ReadFull(conn, resp[:4]); err != nil {
			log.Fatal(err)
		}
		m := int(binary.BigEndian.Uint32(resp[:4]))
		if _, err := io.ReadFull(conn, resp[:m]); err != nil {
			log.Fatal(err)
		}
	}
	for range 2000 {
		rt()
	}
	phase := func(name string, gap time.Duration) {
		lat := make([]time.Duration, 0, *n)
		c0 := cpu(*pid)
		start := time.Now()
		next := start
		for range *n {
			if gap > 0 {
				next = next.Add(gap)
				for time.Now().Before(next) {
					if d := time.Until(next); d > 200*time.Microsecond {
						time.Sleep(d - 100*time.Microsecond)
					}
				}
			}
			t := time.Now()
			rt()
			lat = append(lat, time.Since(t))
		}
		wall := time.Since(start)
		c1 := cpu(*pid)
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
		fmt.Printf("%-14s %8.0f req/s  broker %5.1f cpu-µs/req  p50 %v p99 %v p99.9 %v\n", name,
			float64(*n)/wall.Seconds(), (c1-c0)*1e6/float64(*n), q(0.5), q(0.99), q(0.999))
	}
	phase("back-to-back", 0)
	if *rate > 0 {
		phase(fmt.Sprintf("paced %d/s", *rate), time.Second/time.Duration(*rate))
	}
	if *e2eOn && *rate > 0 {
		e2ePhase(ctx, *addr, *pid, topic, *n, time.Second/time.Duration(*rate), rt)
	}
}

// e2ePhase sends n produces paced at gap, one at a time as above, while a
// consumer on a second connection long-polls Fetch v12 (max wait 500 ms,
// min bytes 1) from the log end, and reports the time from writing each
// Produce to reading the Fetch answer that carries its record: the
// broker's part of end-to-end latency, without a client library's
// goroutines, batching or allocation in the way.
func e2ePhase(ctx context.Context, addr string, pid int, topic string, n int, gap time.Duration, rt func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		log.Fatal(err)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	cl.Close()
	if err != nil {
		log.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	first := end.Offset
	sent := make([]atomic.Int64, n)
	lat := make([]time.Duration, 0, n)
	done := make(chan error, 1)
	c0 := cpu(pid)
	go func() { done <- fetchLoop(addr, topic, first, n, sent, &lat) }()
	next := time.Now()
	for i := range n {
		// Sleep, not spin: a spinning producer takes one of the cores the
		// broker and the consumer share.
		next = next.Add(gap)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		sent[i].Store(time.Now().UnixNano())
		rt()
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	c1 := cpu(pid)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Printf("%-14s %8d records  broker %5.1f cpu-µs/record  produce→fetch p50 %v p99 %v p99.9 %v max %v\n", "e2e paced",
		len(lat), (c1-c0)*1e6/float64(n), q(0.5), q(0.99), q(0.999), lat[len(lat)-1])
}

// fetchLoop reads partition 0 of topic from offset first until it has seen
// n records, noting for each the time since sent[offset-first].
func fetchLoop(addr, topic string, first int64, n int, sent []atomic.Int64, lat *[]time.Duration) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Minute))
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("small-bench-e2e"))
	var reqBuf []byte
	buf := make([]byte, 1<<20)
	offset := first
	for corr := int32(1); offset < first+int64(n); corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, 500, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		reqBuf = formatter.AppendRequest(reqBuf[:0], req, corr)
		if _, err := conn.Write(reqBuf); err != nil {
			return err
		}
		if _, err := io.ReadFull(conn, buf[:4]); err != nil {
			return err
		}
		m := int(binary.BigEndian.Uint32(buf[:4]))
		if m > len(buf) {
			buf = make([]byte, m)
		}
		if _, err := io.ReadFull(conn, buf[:m]); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		if err := resp.ReadFrom(buf[5:m]); err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return fmt.Errorf("fetch at %d: unexpected answer", offset)
		}
		b := resp.Topics[0].Partitions[0].RecordBatches
		for len(b) >= 61 {
			length := int64(binary.BigEndian.Uint32(b[8:]))
			if int64(len(b)) < 12+length {
				break
			}
			base := int64(binary.BigEndian.Uint64(b))
			last := base + int64(binary.BigEndian.Uint32(b[23:]))
			for o := max(base, offset); o <= last; o++ {
				if i := o - first; i >= 0 && i < int64(n) {
					*lat = append(*lat, time.Duration(now-sent[i].Load()))
				}
			}
			offset = max(offset, last+1)
			b = b[12+length:]
		}
	}
	return nil
}

// cpu is the broker's utime+stime in seconds.
func cpu(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(ut+st) / 100
}

func produceFrame(topic string, size int) []byte {
	now := time.Now().UnixMilli()
	r := kmsg.Record{Value: make([]byte, size)}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: r.AppendTo(nil),
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("small-bench")).AppendRequest(nil, req, 1)
}
