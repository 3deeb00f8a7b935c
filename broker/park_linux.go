package broker

import (
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// parker parks idle connections (Linux): a plain TCP connection that has
// sent nothing for parkAfter, has nothing buffered and no answer in
// flight gives up its reader goroutine (and its writer, if it had one) and
// its read buffer; one epoll instance for the whole broker watches the
// parked sockets, and the first byte that arrives on one starts a reader
// for it again. An idle connection then costs its conn, its context and
// its socket, about 2 KB, instead of a goroutine stack grown by the
// requests it handled and a 4 KiB buffer, as Kafka's selector keeps an
// idle connection at a channel and a key. The parker also closes parked
// connections idle for connections.max.idle.ms, which their reader's read
// deadline would otherwise have done.
type parker struct {
	epfd, wakefd int
	idle         time.Duration // connections.max.idle.ms; 0: never closed for idleness

	mu     sync.Mutex
	conns  map[int32]*parkedConn // by the id in their epoll event
	next   int32
	closed bool
	done   chan struct{}

	// freed counts the bytes of read buffers parked connections dropped
	// since the parker last returned memory to the system (release);
	// lastRelease is when it did. Run-owned but freed.
	freed       atomic.Int64
	lastRelease time.Time
}

// parkedConn is one parked connection.
type parkedConn struct {
	c          *conn
	fd         int
	lastActive time.Time // its last request, within 1% of parkAfter
}

// newParker starts a parker; nil (and no parking) when epoll is not to be
// had.
func newParker(idle time.Duration) *parker {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil
	}
	p := &parker{epfd: epfd, wakefd: wakefd, idle: idle, conns: map[int32]*parkedConn{}, done: make(chan struct{})}
	go p.run()
	return p
}

// park hands c to the parker; false when it cannot take it (closing, or
// the socket is gone), and the caller keeps reading.
func (p *parker) park(c *conn, lastActive time.Time) bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	id := p.next
	p.next++
	for id == -1 || p.conns[id] != nil { // -1 is the wake event's
		id = p.next
		p.next++
	}
	// The socket is registered while the fd cannot be closed (Control)
	// and p.mu is held, so a wake for it finds it in conns.
	added := false
	err = rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: id}
		if unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) == nil {
			p.conns[id] = &parkedConn{c: c, fd: int(fd), lastActive: lastActive}
			added = true
		}
	})
	return err == nil && added
}

// take removes the parked connection id; nil when another took it first
// (a wake, the idle sweep, close).
func (p *parker) take(id int32) *parkedConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.conns[id]
	delete(p.conns, id)
	return pc
}

// unwatch stops watching pc's socket. Its fd is still open: only its
// reader or the parker's close closes the connection, and neither runs
// before the parked connection is taken.
func (p *parker) unwatch(pc *parkedConn) {
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, pc.fd, nil)
}

func (p *parker) run() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 128)
	lastSweep := time.Now()
	for {
		n, err := unix.EpollWait(p.epfd, events, 1000)
		if err != nil && !errors.Is(err, unix.EINTR) {
			n = 0
			time.Sleep(10 * time.Millisecond) // not expected; do not spin
		}
		for _, ev := range events[:max(n, 0)] {
			if ev.Fd == -1 {
				return // close
			}
			if pc := p.take(ev.Fd); pc != nil {
				p.unwatch(pc)
				go pc.c.readLoop()
			}
		}
		p.release(time.Now())
		if now := time.Now(); p.idle > 0 && now.Sub(lastSweep) >= time.Second {
			lastSweep = now
			p.sweep(now)
		}
	}
}

// sweep closes the connections parked for connections.max.idle.ms.
func (p *parker) sweep(now time.Time) {
	var expired []*parkedConn
	p.mu.Lock()
	for id, pc := range p.conns {
		if now.Sub(pc.lastActive) >= p.idle {
			expired = append(expired, pc)
			delete(p.conns, id)
		}
	}
	p.mu.Unlock()
	for _, pc := range expired {
		p.unwatch(pc)
		pc.c.logger().Info("closing idle connection")
		pc.c.cancel()
		pc.c.end()
	}
}

// close stops the parker and closes every parked connection; later parks
// fail.
func (p *parker) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	parked := p.conns
	p.conns = nil
	p.mu.Unlock()
	var one [8]byte
	one[0] = 1 // eventfd counts in host order; any non-zero value wakes
	unix.Write(p.wakefd, one[:])
	<-p.done
	for _, pc := range parked {
		pc.c.cancel()
		pc.c.end()
	}
	unix.Close(p.epfd)
	unix.Close(p.wakefd)
}

// parked counts the parked connections; 0 without a parker.
func (p *parker) parked() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// released notes that a parked connection dropped n bytes of buffers.
func (p *parker) released(n int) { p.freed.Add(int64(n)) }

// Parked connections give their memory back to the system in bursts
// (parker.release): once they have dropped releaseAfterBytes of buffers,
// at most every releaseEvery.
const (
	releaseAfterBytes = 4 << 20 // 1,024 connections' read buffers
	releaseEvery      = 10 * time.Second
)

// release returns the memory of the buffers parked connections dropped to
// the system once there is enough of it: a collection and
// debug.FreeOSMemory. Without it an idle broker would hold it until its
// next collection, which the Go runtime forces only every two minutes,
// and keep much of it after (the heap goal is twice what was live): about
// 15 KB of RSS per idle connection instead of 4.
func (p *parker) release(now time.Time) {
	if p.freed.Load() < releaseAfterBytes || now.Sub(p.lastRelease) < releaseEvery {
		return
	}
	p.freed.Store(0)
	p.lastRelease = now
	debug.FreeOSMemory()
}
