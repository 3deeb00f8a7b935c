package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceCmd is "gregor produce TOPIC": one record per stdin line.
func produceCmd(args []string) error {
	var cf clientFlags
	fs := newFlagSet("produce", "TOPIC [flags] < lines",
		"Produces one record per line of standard input (without its newline).")
	cf.register(fs)
	keySep := fs.String("key-separator", "", "split each line at the first SEP into key and value (default: no key)")
	partition := fs.Int("partition", -1, "partition to produce to (-1: the default partitioner)")
	var headers multiFlag
	fs.Var(&headers, "header", "key=value header added to every record (repeatable)")
	acks := fs.String("acks", "all", "all, leader or none")
	maxLine := fs.Int("max-line-bytes", 1<<20, "longest accepted line")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("produce: name exactly one topic")
	}
	topic := pos[0]
	if cf.timeout == 30e9 {
		cf.timeout = 0 // reading stdin may take as long as it takes
	}
	var hs []kgo.RecordHeader
	for _, h := range headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok {
			return fmt.Errorf("--header %q: want key=value", h)
		}
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	opts := []kgo.Opt{kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation()}
	switch *acks {
	case "all":
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("--acks %q: want all, leader or none", *acks)
	}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := cf.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cf.context()
	defer cancel()
	return produceLines(ctx, cl, os.Stdin, topic, *keySep, int32(*partition), hs, *maxLine)
}

func produceLines(ctx context.Context, cl *kgo.Client, in io.Reader, topic, keySep string, partition int32, hs []kgo.RecordHeader, maxLine int) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var (
		sent, acked atomic.Int64
		mu          sync.Mutex
		firstErr    error
	)
	prog := newProgress()
	for sc.Scan() {
		line := sc.Text()
		r := &kgo.Record{Topic: topic, Headers: hs}
		if partition >= 0 {
			r.Partition = partition
		}
		if keySep != "" {
			if k, v, ok := strings.Cut(line, keySep); ok {
				r.Key, r.Value = []byte(k), []byte(v)
			} else {
				r.Value = []byte(line)
			}
		} else {
			r.Value = []byte(line)
		}
		sent.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			acked.Add(1)
		})
		prog.update("produced %d records (%d acknowledged)", sent.Load(), acked.Load())
		mu.Lock()
		err := firstErr
		mu.Unlock()
		if err != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	prog.done("produced %d records (%d acknowledged)", sent.Load(), acked.Load())
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	if firstErr != nil {
		return fmt.Errorf("produce to %s: %w (%d of %d records acknowledged)", topic, firstErr, acked.Load(), sent.Load())
	}
	return nil
}
