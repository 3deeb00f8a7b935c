package broker

import (
	"context"
	"net"
	"testing"
	"time"
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
	select {
	case <-got:
		t.Fatal("acquired beyond the budget")
	case <-time.After(50 * time.Millisecond):
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
	_, addr := startBroker(t, "", map[string]string{"max.connections": "2"})
	var conns []net.Conn
	for i := 0; i < 2; i++ {
		c := dialRaw(t, addr)
		conns = append(conns, c.nc)
	}
	time.Sleep(100 * time.Millisecond)
	third := dialRaw(t, addr)
	third.expectClosed()
	conns[0].Close()
	time.Sleep(100 * time.Millisecond)
	fourth := dialRaw(t, addr)
	req := apiVersionsReq()
	fourth.send(1, req)
	resp := req.ResponseKind()
	fourth.recv(1, resp)
}
