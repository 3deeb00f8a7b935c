//go:build linux

package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPark_IdleConnectionsParkAndResume: connections idle for parkAfter
// are parked (no goroutine, no read buffer), one whose long-polling Fetch
// started a writer too; each answers its next request in order as before
// and parks again; a client closing a parked connection ends it; closing
// the broker ends the parked ones.
func TestPark_IdleConnectionsParkAndResume(t *testing.T) {
	b, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	if _, err := kadm.NewClient(cl).CreateTopic(testCtx(t), 1, 1, nil, "park"); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	waitFor(t, 10*time.Second, "the admin client's connections gone", func() bool { return b.srv.active.Load() == 0 })
	var conns []*rawConn
	for range 3 {
		c := dialRaw(t, addr)
		c.send(1, kmsg.NewPtrApiVersionsRequest())
		c.recv(1, kmsg.NewPtrApiVersionsResponse())
		conns = append(conns, c)
	}
	// A Fetch that long-polls is answered by the connection's writer.
	fetchReq := func(maxWaitMs int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 12, -1, maxWaitMs, 1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "park"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	fetch := func(c *rawConn, corr int32) {
		t.Helper()
		req := fetchReq(100)
		c.send(corr, req)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.Version = 12
		c.recv(corr, resp)
		if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
			t.Fatalf("fetch: %v", err)
		}
	}
	fetch(conns[2], 2)
	// A long poll outlasting parkAfter keeps its connection: the reader,
	// finding an answer in flight when its park deadline passes, reads on.
	longPoll := fetchReq(2500)
	start := time.Now()
	conns[2].send(3, longPoll)
	lresp := longPoll.ResponseKind().(*kmsg.FetchResponse)
	lresp.Version = 12
	conns[2].recv(3, lresp)
	if el := time.Since(start); el < 2*time.Second {
		t.Fatalf("the long poll answered after %v, want its 2.5 s wait", el)
	}
	if n := b.srv.active.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
	waitFor(t, 10*time.Second, "3 connections parked", func() bool { return b.srv.parker.parked() == 3 })

	// Each answers again, pipelined requests in order, and parks again.
	for i, c := range conns {
		c.send(10, kmsg.NewPtrApiVersionsRequest())
		c.send(11, kmsg.NewPtrApiVersionsRequest())
		c.recv(10, kmsg.NewPtrApiVersionsResponse())
		c.recv(11, kmsg.NewPtrApiVersionsResponse())
		if i == 2 {
			fetch(c, 12)
		}
	}
	waitFor(t, 10*time.Second, "3 connections parked again", func() bool { return b.srv.parker.parked() == 3 })

	conns[0].nc.Close()
	waitFor(t, 10*time.Second, "the closed connection ended", func() bool {
		return b.srv.active.Load() == 2 && b.srv.parker.parked() == 2
	})
	done := make(chan struct{})
	go func() { b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return with parked connections")
	}
	for _, c := range conns[1:] {
		c.expectClosed()
	}
}

// TestPark_IdleTimeoutClosesParked: a parked connection is closed once idle
// for connections.max.idle.ms, as one that kept its reader is.
func TestPark_IdleTimeoutClosesParked(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"connections.max.idle.ms": "1500"})
	c := dialRaw(t, addr)
	c.send(1, kmsg.NewPtrApiVersionsRequest())
	c.recv(1, kmsg.NewPtrApiVersionsResponse())
	start := time.Now()
	waitFor(t, 5*time.Second, "the connection parked", func() bool { return b.srv.parker.parked() == 1 })
	c.expectClosed()
	if el := time.Since(start); el < 1400*time.Millisecond {
		t.Fatalf("closed after %v, before connections.max.idle.ms", el)
	}
	waitFor(t, 5*time.Second, "the connection forgotten", func() bool { return b.srv.active.Load() == 0 })
}
