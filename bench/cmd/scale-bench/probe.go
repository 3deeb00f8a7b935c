package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// partitionsPerTopic is every topic's partition count.
	partitionsPerTopic = 10
	// topicsPerRequest is how many topics one CreateTopics or Produce
	// request names.
	topicsPerRequest = 100
	// requestTimeout bounds one request's round trip.
	requestTimeout = 2 * time.Minute
)

func topicName(i int) string { return fmt.Sprintf("scale-%05d", i) }

// createTopics creates the topics named, partitionsPerTopic partitions each
// at replication factor 1, in CreateTopics requests of topicsPerRequest
// topics sent one after another on c; the topics of an answer with a
// retriable error are asked for again.
func createTopics(ctx context.Context, c *conn, names []string) error {
	for len(names) > 0 {
		n := min(len(names), topicsPerRequest)
		batch := names[:n]
		names = names[n:]
		for len(batch) > 0 {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version = createTopicsVersion
			req.TimeoutMillis = int32(requestTimeout.Milliseconds())
			for _, name := range batch {
				t := kmsg.NewCreateTopicsRequestTopic()
				t.Topic = name
				t.NumPartitions = partitionsPerTopic
				t.ReplicationFactor = 1
				req.Topics = append(req.Topics, t)
			}
			kresp, err := c.request(req, requestTimeout)
			if err != nil {
				return err
			}
			resp := kresp.(*kmsg.CreateTopicsResponse)
			if len(resp.Topics) != len(batch) {
				return fmt.Errorf("CreateTopics of %d topics answered for %d", len(batch), len(resp.Topics))
			}
			var again []string
			for _, t := range resp.Topics {
				err := kerr.ErrorForCode(t.ErrorCode)
				switch {
				case err == nil, errors.Is(err, kerr.TopicAlreadyExists): // from a retry
				case kerr.IsRetriable(err):
					again = append(again, t.Topic)
				default:
					return fmt.Errorf("create %s: %w", t.Topic, err)
				}
			}
			if len(again) > 0 {
				log.Printf("CreateTopics: %d of %d topics to ask again", len(again), len(batch))
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(100 * time.Millisecond):
				}
			}
			batch = again
		}
	}
	return nil
}

// topicParts is one topic's partitions in a Produce request.
type topicParts struct {
	topic string
	parts []int32
}

// writable writes one record at acks=1 to every partition of the topics
// and again to each partition whose answer was an error (or whose request
// got none) until every one has succeeded, 20 ms between rounds. Each
// Produce request holds every partition of topicsPerRequest topics; -inflight
// of them are in flight at once, each on its own connection.
func writable(ctx context.Context, addr string, topics []string) error {
	left := make([]topicParts, 0, len(topics))
	for _, t := range topics {
		tp := topicParts{topic: t}
		for p := range int32(partitionsPerTopic) {
			tp.parts = append(tp.parts, p)
		}
		left = append(left, tp)
	}
	records := oneRecordBatch([]byte("scale-bench"), time.Now().UnixMilli())

	type answer struct {
		failed []topicParts
		why    string
	}
	jobs := make(chan []topicParts)
	answers := make(chan answer)
	var wg sync.WaitGroup
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	for range *inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c *conn
			defer func() {
				if c != nil {
					c.close()
				}
			}()
			for job := range jobs {
				failed, why := produceOnce(ctx, &c, addr, job, records)
				answers <- answer{failed, why}
			}
		}()
	}
	for round := 1; ; round++ {
		var reqs [][]topicParts
		for chunk := range slices.Chunk(left, topicsPerRequest) {
			reqs = append(reqs, chunk)
		}
		go func() {
			for _, r := range reqs {
				jobs <- r
			}
		}()
		left = left[:0:0]
		whys := map[string]int{}
		for range reqs {
			a := <-answers
			left = append(left, a.failed...)
			if a.why != "" {
				whys[a.why]++
			}
		}
		if *verbose {
			n := 0
			for _, tp := range left {
				n += len(tp.parts)
			}
			log.Printf("probe round %d: %d requests, %d partitions left: %v", round, len(reqs), n, whys)
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			n := 0
			for _, tp := range left {
				n += len(tp.parts)
			}
			return fmt.Errorf("%d partitions not writable after %d rounds (%v; last round's errors: %v)", n, round, context.Cause(ctx), whys)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// produceOnce sends one Produce request for job on *c (dialled first when
// nil, dropped after an error) and returns the partitions that did not
// succeed, with one reason.
func produceOnce(ctx context.Context, c **conn, addr string, job []topicParts, records []byte) ([]topicParts, string) {
	if *c == nil {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		nc, err := dial(dctx, addr)
		cancel()
		if err != nil {
			return job, "dial: " + err.Error()
		}
		*c = nc
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = produceVersion
	req.Acks = 1
	req.TimeoutMillis = 30000
	for _, tp := range job {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tp.topic
		for _, p := range tp.parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rp.Records = records
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := (*c).request(req, min(requestTimeout, remaining(ctx)))
	if err != nil {
		(*c).close()
		*c = nil
		return job, err.Error()
	}
	type key struct {
		topic string
		p     int32
	}
	ok := map[key]bool{}
	why := ""
	for _, rt := range kresp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 {
				ok[key{rt.Topic, rp.Partition}] = true
			} else if why == "" {
				why = kerr.ErrorForCode(rp.ErrorCode).Error()
			}
		}
	}
	var failed []topicParts
	for _, tp := range job {
		var ps []int32
		for _, p := range tp.parts {
			if !ok[key{tp.topic, p}] {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			failed = append(failed, topicParts{tp.topic, ps})
		}
	}
	if len(failed) > 0 && why == "" {
		why = "partitions missing from the answer"
	}
	return failed, why
}

// remaining is the time left before ctx's deadline (requestTimeout without
// one), at least a millisecond.
func remaining(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return requestTimeout
	}
	return max(time.Until(dl), time.Millisecond)
}

// metadataAll sends 5 Metadata requests for all topics on one connection
// and returns the median round trip and the size of the last answer; every
// answer must list at least want topics.
func metadataAll(ctx context.Context, addr string, want int) (time.Duration, int, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	var ds []time.Duration
	for range 5 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = metadataVersion
		req.Topics = nil // all
		req.AllowAutoTopicCreation = false
		start := time.Now()
		kresp, err := c.request(req, min(requestTimeout, remaining(ctx)))
		if err != nil {
			return 0, 0, err
		}
		ds = append(ds, time.Since(start))
		if n := len(kresp.(*kmsg.MetadataResponse).Topics); n < want {
			return 0, 0, fmt.Errorf("Metadata listed %d topics, want at least %d", n, want)
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2], c.last, nil
}

// idleConns opens n connections to addr, 16 at a time, each asking
// ApiVersions once and reading the answer, and returns them open.
func idleConns(ctx context.Context, addr string, n int) ([]*conn, error) {
	conns := make([]*conn, n)
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				c, err := dial(ctx, addr)
				if err == nil {
					req := kmsg.NewPtrApiVersionsRequest()
					req.Version = 0
					var kresp kmsg.Response
					if kresp, err = c.request(req, 10*time.Second); err == nil {
						err = kerr.ErrorForCode(kresp.(*kmsg.ApiVersionsResponse).ErrorCode)
					}
					if err != nil {
						c.close()
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("connection %d: %w", i, err))
					mu.Unlock()
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}
