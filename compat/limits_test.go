package compat

import (
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rssKiB reads a process's resident set (VmRSS) or peak (VmHWM) in KiB.
func rssKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestLimits_IdleConnectionsAndRequestFlood holds 5,000 idle connections to
// the real broker, then floods it with large produce requests from many
// connections at once, and checks that its resident memory stays bounded
// (the request-byte budget makes readers wait instead of buffering) and that
// it keeps answering throughout. The figures are logged.
func TestLimits_IdleConnectionsAndRequestFlood(t *testing.T) {
	singleNodeOnly(t, "measures one process's RSS")
	if testing.Short() {
		t.Skip("-short")
	}
	b := newBroker(t, "queued.max.request.bytes=67108864", "socket.request.max.bytes=10485760")
	pid := b.cmd.Process.Pid
	idle := rssKiB(t, pid, "VmRSS")

	const idleConns = 5000
	conns := make([]net.Conn, 0, idleConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < idleConns; i++ {
		c, err := net.DialTimeout("tcp", b.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	// Measure once the broker has accepted every one: it accepts in
	// order, so a client that connects after them and is answered was
	// accepted after all of them.
	ictx := testCtx(t, 20*time.Second)
	if err := newClient(t, b).Ping(ictx); err != nil {
		t.Fatalf("broker unresponsive with %d idle connections: %v", idleConns, err)
	}
	withIdle := rssKiB(t, pid, "VmRSS")

	// The flood: 64 connections each announce a 9 MiB request and send its
	// bytes slowly, well past what the 64 MiB budget admits at once.
	const flooders, size, budget = 64, 9 << 20, 64 << 20
	var wg sync.WaitGroup
	var written atomic.Int64
	stop := make(chan struct{})
	for i := 0; i < flooders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", b.addr)
			if err != nil {
				return
			}
			defer c.Close()
			c.Write(binary.BigEndian.AppendUint32(nil, size))
			chunk := make([]byte, 64<<10)
			for sent := 0; sent < size; sent += len(chunk) {
				select {
				case <-stop:
					return
				default:
				}
				c.SetWriteDeadline(time.Now().Add(2 * time.Second))
				n, err := c.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	// The broker keeps serving a well-behaved client during the flood: ask
	// once the flooders have written twice the budget, more than the
	// broker admits at once and more than the sockets buffer, while most
	// of the flood (64 x 9 MiB) is still to come.
	deadline := time.Now().Add(20 * time.Second)
	for written.Load() < 2*budget {
		if time.Now().After(deadline) {
			t.Fatalf("the broker took only %d MiB of the flood in 20s", written.Load()>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx := testCtx(t, 20*time.Second)
	cl := newClient(t, b)
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("broker unresponsive during the flood: %v", err)
	}
	peak := rssKiB(t, pid, "VmHWM")
	close(stop)
	wg.Wait()
	t.Logf("RSS: idle %d MiB; with %d idle connections %d MiB; peak during a %d x %d MiB request flood %d MiB",
		idle>>10, idleConns, withIdle>>10, flooders, size>>20, peak>>10)
	if withIdle > 200<<10 {
		t.Errorf("RSS with %d idle connections is %d MiB", idleConns, withIdle>>10)
	}
	// In flight: at most the 64 MiB budget. The collector (GOGC=100) lets
	// the heap reach about twice the live data before it runs, and each
	// refused request is garbage at once: allow three budgets over the
	// idle set. What matters is that it does not grow with the flood (160
	// such requests gave 214 MiB, 64 gave 186–250 MiB).
	if peak > withIdle+3*budget>>10 {
		t.Errorf("peak RSS %d MiB during the flood: the request budget does not bound memory", peak>>10)
	}
}
