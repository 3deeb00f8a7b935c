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
