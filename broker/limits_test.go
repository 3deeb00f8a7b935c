package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestByteBudget_WaitsForRoom(t *testing.T) {
	bb := byteBudget{limit: 100}
	ctx := context.Background()
	if err := bb.acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		bb.acquire(ctx, 60)
		close(got)
	}()
	// The waiter creates the wake channel only after finding no room.
	waitFor(t, 5*time.Second, "the second acquire to wait", func() bool {
		bb.mu.Lock()
		defer bb.mu.Unlock()
		return bb.wake != nil
	})
	select {
	case <-got:
		t.Fatal("acquired beyond the budget")
	default:
	}
	bb.release(60)
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("not woken by release")
	}
	// A request larger than the whole budget is admitted when alone.
	bb.release(60)
	if err := bb.acquire(ctx, 500); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := bb.acquire(cctx, 1); err == nil {
		t.Fatal("acquire did not respect its context")
	}
}

func TestServer_IdleConnectionsClosed(t *testing.T) {
	_, addr := startBroker(t, "", map[string]string{"connections.max.idle.ms": "200"})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data from an idle connection")
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("idle connection closed after %v, want about 200ms", el)
	}
}

func TestServer_MaxConnections(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"max.connections": "2"})
	roundTrip := func(c *rawConn) {
		t.Helper()
		req := apiVersionsReq()
		c.send(1, req)
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		c.recv(1, resp)
		if resp.ErrorCode != 0 {
			t.Fatalf("ApiVersions: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	// An answer proves the broker accepted and counted the connection.
	var conns []*rawConn
	for i := 0; i < 2; i++ {
		c := dialRaw(t, addr)
		roundTrip(c)
		conns = append(conns, c)
	}
	if n := b.srv.active.Load(); n != 2 {
		t.Fatalf("active connections %d, want 2", n)
	}
	third := dialRaw(t, addr)
	third.expectClosed()
	if n := b.srv.active.Load(); n != 2 {
		t.Fatalf("active connections %d after the refused third, want 2", n)
	}
	conns[0].nc.Close()
	waitFor(t, 5*time.Second, "the broker to notice the closed connection", func() bool { return b.srv.active.Load() == 1 })
	fourth := dialRaw(t, addr)
	roundTrip(fourth)
	roundTrip(conns[1])
}
