package broker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connServed dials addr from the local IP from, sends ApiVersions and
// returns whether it was answered, and how long the answer (or the close)
// took.
func connServed(t *testing.T, addr, from string) (bool, time.Duration) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	start := time.Now()
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := nc.Write(testFormatter.AppendRequest(nil, req, 1)); err != nil {
		return false, time.Since(start) // closed already
	}
	_, err = protocol.ReadFrameSize(nc, 1<<20)
	switch {
	case err == nil:
		return true, time.Since(start)
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err):
		return false, time.Since(start)
	default:
		t.Fatalf("reading the answer: %v", err)
		return false, 0
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// TestConnectionCreationRate_PerIP sets connection_creation_rate=2 for
// 127.0.0.1 and 1 for the default IP entity, with one-second rate windows
// (quota.window.num=2) and the quota clock stopped: within a window the
// third connection from 127.0.0.1 is at rate 3, (3-2)/2 × 1 s = 500 ms over,
// and is closed unserved after 500 ms; the fourth after 1 s (the cap, one
// window). 127.0.0.2 gets the default entity's 1 per second. Once the
// windows have passed, 127.0.0.1 is served again.
func TestConnectionCreationRate_PerIP(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"})
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	b.quotas.SetClock(func() time.Time { return time.UnixMilli(clock.Load()) })
	admin := newClient(t, addr)
	got := alterQuotas(t, admin, false,
		quotaEntry(quotaEnt("ip=127.0.0.1"), "connection_creation_rate=2"),
		quotaEntry(quotaEnt("ip"), "connection_creation_rate=1"))
	if fmt.Sprint(got) != "[OK OK]" {
		t.Fatalf("alter: %q", got)
	}
	admin.Close()
	expect := func(from string, served bool, minWait time.Duration) {
		t.Helper()
		ok, took := connServed(t, addr, from)
		if ok != served || took < minWait || (!served && took > minWait+2*time.Second) {
			t.Fatalf("connection from %s: served %v after %v, want served %v after %v", from, ok, took, served, minWait)
		}
	}
	expect("127.0.0.1", true, 0)
	expect("127.0.0.1", true, 0)
	expect("127.0.0.1", false, 500*time.Millisecond)
	expect("127.0.0.1", false, time.Second)
	expect("127.0.0.2", true, 0)
	expect("127.0.0.2", false, time.Second)
	clock.Add(2000)
	expect("127.0.0.1", true, 0)
}

// TestConnectionCreationRate_BrokerWide sets max.connection.creation.rate=2
// with one-second windows and the quota clock stopped: the third
// connection is served after the listener waited 500 ms, the fourth after
// 1 s.
func TestConnectionCreationRate_BrokerWide(t *testing.T) {
	b, addr := startBroker(t, "", map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1",
		"max.connection.creation.rate": "2"})
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	b.quotas.SetClock(func() time.Time { return time.UnixMilli(clock.Load()) })
	for i, want := range []time.Duration{0, 0, 500 * time.Millisecond, time.Second} {
		ok, took := connServed(t, addr, "127.0.0.1")
		if !ok || took < want || took > want+2*time.Second {
			t.Fatalf("connection %d: served %v after %v, want served after %v", i+1, ok, took, want)
		}
	}
}
