package compat

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// etcdGate stands between a node's etcd peer proxy and its CONTROLLER
// listener and refuses the raft traffic of the members the cluster has cut
// (clusterNode.CutEtcd). Stopping a node's peer proxy alone does not take
// its member out of the quorum: etcd's rafthttp receives a peer's messages
// on streams it dialed itself and sends its own by POSTs it dials too, so
// a member whose inbound peer port is closed keeps its quorum through its
// outbound connections (observed: leadership never moved in 60 s). The
// gate tells senders apart by the X-PeerURLs header rafthttp sets on every
// stream and pipeline request (the sender's advertised peer URLs, which
// here are its peer proxy's address) and closes a cut sender's
// connections; the first request of a connection names its sender, and a
// connection carries one sender's requests only. Requests without the
// header (version checks, probes) pass.
type etcdGate struct {
	ln     net.Listener
	target string
	cut    func(sender string) bool

	mu    sync.Mutex
	conns map[net.Conn]string // accepted connection → sender's X-PeerURLs
}

func newEtcdGate(target string, cut func(string) bool) (*etcdGate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &etcdGate{ln: ln, target: target, cut: cut, conns: map[net.Conn]string{}}
	go g.serve()
	return g, nil
}

func (g *etcdGate) Addr() string { return g.ln.Addr().String() }

func (g *etcdGate) Close() {
	g.ln.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		c.Close()
	}
}

// closeCut closes the open connections whose sender is now cut (the same
// test as for a new connection).
func (g *etcdGate) closeCut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c, s := range g.conns {
		if s != "" && g.cut(s) {
			c.Close()
		}
	}
}

func (g *etcdGate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.handle(c)
	}
}

func (g *etcdGate) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var head []byte
	sender := ""
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		head = append(head, line...)
		if len(head) > 64<<10 {
			return
		}
		s := strings.TrimRight(string(line), "\r\n")
		if s == "" {
			break
		}
		if k, v, ok := strings.Cut(s, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "X-PeerURLs") {
			sender = strings.TrimSpace(v)
		}
	}
	c.SetReadDeadline(time.Time{})
	g.mu.Lock()
	if sender != "" && g.cut(sender) {
		g.mu.Unlock()
		return
	}
	g.conns[c] = sender
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}()
	up, err := net.DialTimeout("tcp", g.target, 2*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write(head); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, up)
		c.Close()
		close(done)
	}()
	_, _ = io.Copy(up, br) // until either side closes (or closeCut)
	up.Close()
	<-done
}
