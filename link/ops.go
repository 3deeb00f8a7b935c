package link

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The operations the CLI and the admin API call, on any broker.

// Create stores a new link after checking that the source answers.
func (m *Manager) Create(ctx context.Context, l *Link) error {
	l.CreatedMs = time.Now().UnixMilli()
	if err := l.Validate(); err != nil {
		return err
	}
	opts, err := sourceOptions(l)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		return fmt.Errorf("%w: the source %v does not answer: %v", ErrInvalid, l.Source, err)
	}
	if err := m.cfg.Store.Create(ctx, l); err != nil {
		return err
	}
	m.Kick()
	return nil
}

// Delete removes a link (see Store.Delete).
func (m *Manager) Delete(ctx context.Context, name string, force bool) error {
	if err := m.cfg.Store.Delete(ctx, name, force); err != nil {
		return err
	}
	m.Kick()
	return nil
}

// List returns the links by name.
func (m *Manager) List() []*Link {
	st := m.cfg.Store.State()
	var out []*Link
	for _, n := range slices.Sorted(maps.Keys(st.Links)) {
		out = append(out, st.Links[n])
	}
	return out
}

// Status is a link's state as `gregor link status` shows it, gathered from
// every broker of the cluster: each mirror partition is fetched by its
// leader, and the link synced by the controller, so each broker's share
// (NodeStatus) is asked of it (Host.PeerLinkStatus).
type Status struct {
	Link *Link `json:"link"`
	// Error is every broker's latest error not mended since, each
	// prefixed "node N: " in a cluster.
	Error   string         `json:"error,omitempty"`
	Mirrors []MirrorStatus `json:"mirrors"`
	Groups  []*GroupSync   `json:"groups"`
	// Metrics is what the brokers asked mirrored, summed.
	Metrics *RunnerCounters `json:"metrics,omitempty"`
	// Nodes is each broker's share, by node id; Unreached a line for each
	// broker that could not be asked.
	Nodes     []*NodeStatus `json:"nodes,omitempty"`
	Unreached []string      `json:"unreached,omitempty"`
}

// MirrorStatus is one mirror topic's state and lag.
type MirrorStatus struct {
	Topic         string            `json:"topic"`
	State         MirrorState       `json:"state"`
	SourceDeleted bool              `json:"source_deleted,omitempty"`
	Partitions    []PartitionStatus `json:"partitions"`
	Error         string            `json:"error,omitempty"`
}

// PartitionStatus is one mirror partition: the source's high watermark,
// the mirror's, and the difference (-1 when not known); the broker that
// fetches it (its leader; -1 when none said so) and why that broker holds
// it back, if it does.
type PartitionStatus struct {
	Partition int32  `json:"partition"`
	SourceEnd int64  `json:"source_end"`
	MirrorEnd int64  `json:"mirror_end"`
	Lag       int64  `json:"lag"`
	Node      int32  `json:"node"`
	Error     string `json:"error,omitempty"`
}

// RunnerCounters are what a broker mirrored of the link.
type RunnerCounters struct {
	Bytes       int64 `json:"bytes"`
	Batches     int64 `json:"batches"`
	FetchErrors int64 `json:"fetch_errors"`
}

// NodeStatus is one broker's share of a link's state: the mirror
// partitions it leads and fetches, its fetching's error, and, on the
// broker that syncs the link (the controller), the sync's.
type NodeStatus struct {
	Node       int32           `json:"node"`
	Syncs      bool            `json:"syncs,omitempty"`
	FetchError string          `json:"fetch_error,omitempty"`
	SyncError  string          `json:"sync_error,omitempty"`
	Partitions []NodePartition `json:"partitions,omitempty"`
	Metrics    RunnerCounters  `json:"metrics"`
}

// NodePartition is a mirror partition as the broker fetching it sees it:
// the source's high watermark in its latest fetch answer (-1: none yet),
// the mirror's log end, and why it is held back, if it is.
type NodePartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	SourceEnd int64  `json:"source_end"`
	MirrorEnd int64  `json:"mirror_end"`
	Error     string `json:"error,omitempty"`
}

// NodeStatus returns this broker's share of a link's state (see
// NodeStatus, the type); ErrNotFound for an unknown link.
func (m *Manager) NodeStatus(name string) (*NodeStatus, error) {
	if m.cfg.Store.State().Links[name] == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	ns := &NodeStatus{Node: m.cfg.NodeID, Syncs: m.cfg.Host.Controller()}
	r := m.runner(name)
	if r == nil {
		return ns, nil
	}
	ns.Metrics = r.counters()
	r.mu.Lock()
	defer r.mu.Unlock()
	ns.FetchError, ns.SyncError = r.fetchErr, r.syncErr
	for _, mp := range r.parts {
		ns.Partitions = append(ns.Partitions, NodePartition{Topic: mp.topic, Partition: mp.partition, SourceEnd: mp.srcHW, MirrorEnd: mp.log.LogEndOffset(), Error: mp.failed})
	}
	slices.SortFunc(ns.Partitions, func(a, b NodePartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return ns, nil
}

// Status reads a link's state: its mirror topics with each partition's
// end offsets in the source and here, and every broker's share
// (NodeStatus), this one's read here, the others' asked of them.
func (m *Manager) Status(ctx context.Context, name string) (*Status, error) {
	st := m.cfg.Store.State()
	l := st.Links[name]
	if l == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	s := &Status{Link: l}
	self, err := m.NodeStatus(name)
	if err != nil {
		return nil, err
	}
	s.Nodes = append(s.Nodes, self)
	peers, unreached := m.cfg.Host.PeerLinkStatus(ctx, name)
	s.Nodes = append(s.Nodes, peers...)
	slices.SortFunc(s.Nodes, func(a, b *NodeStatus) int { return cmp.Compare(a.Node, b.Node) })
	s.Unreached = unreached
	var errs []string
	fetcher := map[tp]*NodePartition{}
	sum := RunnerCounters{}
	for _, ns := range s.Nodes {
		prefix := ""
		if len(s.Nodes) > 1 || len(unreached) > 0 {
			prefix = fmt.Sprintf("node %d: ", ns.Node)
		}
		for _, e := range []string{ns.FetchError, ns.SyncError} {
			if e != "" {
				errs = append(errs, prefix+e)
			}
		}
		for i := range ns.Partitions {
			np := &ns.Partitions[i]
			if np.Error != "" {
				errs = append(errs, prefix+np.Error)
			}
			fetcher[tp{np.Topic, np.Partition}] = np
		}
		sum.Bytes += ns.Metrics.Bytes
		sum.Batches += ns.Metrics.Batches
		sum.FetchErrors += ns.Metrics.FetchErrors
	}
	s.Metrics = &sum
	nodeOf := map[*NodePartition]int32{}
	for _, ns := range s.Nodes {
		for i := range ns.Partitions {
			nodeOf[&ns.Partitions[i]] = ns.Node
		}
	}
	mirrors := st.MirrorsOf(name)
	var topics []string
	for _, mt := range mirrors {
		if mt.SourceDeletedMs == 0 {
			topics = append(topics, mt.Topic)
		}
	}
	// The source's high watermarks, asked now (bounded: a source broker
	// that does not answer leaves its partitions to the fetchers' view).
	var srcEnds kadm.ListedOffsets
	if r := m.runner(name); r != nil && len(topics) > 0 {
		lctx, cancel := context.WithTimeout(ctx, r.sourceTimeout)
		srcEnds, err = kadm.NewClient(r.cl).ListEndOffsets(lctx, topics...)
		cancel()
		if err != nil {
			prefix := ""
			if len(s.Nodes) > 1 || len(unreached) > 0 {
				prefix = fmt.Sprintf("node %d: ", m.cfg.NodeID)
			}
			errs = append(errs, prefix+"source end offsets: "+err.Error())
		}
	}
	for _, mt := range mirrors {
		ms := MirrorStatus{Topic: mt.Topic, State: mt.State, SourceDeleted: mt.SourceDeletedMs != 0}
		n, ok := m.cfg.Host.Partitions(mt.Topic)
		if !ok {
			ms.Error = "topic does not exist here"
			s.Mirrors = append(s.Mirrors, ms)
			continue
		}
		hws, err := m.cfg.Host.HighWatermarks(ctx, mt.Topic, n)
		if err != nil {
			ms.Error = err.Error()
		}
		for p := range n {
			ps := PartitionStatus{Partition: p, SourceEnd: -1, MirrorEnd: -1, Lag: -1, Node: -1}
			np := fetcher[tp{mt.Topic, p}]
			if np != nil {
				ps.Node, ps.Error = nodeOf[np], np.Error
			}
			if o, ok := srcEnds.Lookup(mt.Topic, p); ok && o.Err == nil {
				ps.SourceEnd = o.Offset
			} else if np != nil && np.SourceEnd >= 0 {
				ps.SourceEnd = np.SourceEnd
			}
			if hw, ok := hws[p]; ok {
				ps.MirrorEnd = hw
			}
			if ps.SourceEnd >= 0 && ps.MirrorEnd >= 0 {
				ps.Lag = max(ps.SourceEnd-ps.MirrorEnd, 0)
			}
			ms.Partitions = append(ms.Partitions, ps)
		}
		s.Mirrors = append(s.Mirrors, ms)
	}
	for _, g := range slices.Sorted(maps.Keys(st.Groups[name])) {
		s.Groups = append(s.Groups, st.Groups[name][g])
	}
	s.Error = strings.Join(errs, "; ")
	return s, nil
}

// Promote turns a link's mirror topics (those matching topics, a pattern;
// every one when empty) into ordinary writable topics: each is mirrored up
// to the source's high watermark as of now, then promoted. It returns the
// topics promoted once every one is, or when ctx ends (the promotion then
// goes on, finished by the link's controller).
func (m *Manager) Promote(ctx context.Context, name, topics string) ([]string, error) {
	st := m.cfg.Store.State()
	if st.Links[name] == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	match := func(string) bool { return true }
	if topics != "" {
		re, err := compileWhole(topics)
		if err != nil {
			return nil, fmt.Errorf("%w: topics %q: %v", ErrInvalid, topics, err)
		}
		match = re.MatchString
	}
	var todo []*Mirror
	for _, mt := range st.MirrorsOf(name) {
		if mt.ReadOnly() && match(mt.Topic) {
			todo = append(todo, mt)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	r := m.runner(name)
	if r == nil {
		return nil, fmt.Errorf("link %s is not running on this broker yet", name)
	}
	adm := kadm.NewClient(r.cl)
	var names, fromSource []string
	for _, mt := range todo {
		names = append(names, mt.Topic)
		if mt.SourceDeletedMs == 0 {
			fromSource = append(fromSource, mt.Topic)
		}
	}
	var ends kadm.ListedOffsets
	if len(fromSource) > 0 {
		var err error
		lctx, cancel := context.WithTimeout(ctx, r.sourceTimeout)
		ends, err = adm.ListEndOffsets(lctx, fromSource...)
		cancel()
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("the source's high watermarks: %w", err)
		}
	}
	for _, mt := range todo {
		if mt.State == Promoting {
			continue // targets already set
		}
		c := *mt
		c.State, c.Targets = Promoting, map[int32]int64{}
		if mt.SourceDeletedMs != 0 {
			// Nothing more will come: the mirror's own ends.
			n, ok := m.cfg.Host.Partitions(mt.Topic)
			if !ok {
				return nil, fmt.Errorf("topic %s does not exist", mt.Topic)
			}
			hws, err := m.cfg.Host.HighWatermarks(ctx, mt.Topic, n)
			if err != nil {
				return nil, fmt.Errorf("the mirror's high watermarks: %w", err)
			}
			maps.Copy(c.Targets, hws)
		} else {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Topic == mt.Topic {
					c.Targets[o.Partition] = o.Offset
				}
			})
		}
		if err := m.cfg.Store.PutMirror(ctx, &c); err != nil {
			return nil, err
		}
	}
	m.Kick()
	done := map[string]bool{}
	for {
		for _, mt := range m.cfg.Store.State().MirrorsOf(name) {
			if !slices.Contains(names, mt.Topic) || done[mt.Topic] {
				continue
			}
			if ok, err := m.finishPromotion(ctx, mt); err != nil {
				return nil, err
			} else if ok {
				done[mt.Topic] = true
			}
		}
		if len(done) == len(names) {
			return names, nil
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("promotion of %d topics not finished: %w", len(names)-len(done), ctx.Err())
		case <-t.C:
		}
	}
}

// finishPromotion marks a promoting topic promoted once the last stable
// offset of each partition reached its target (the high watermark did, and
// the transactions open there were aborted); true once it is promoted.
func (m *Manager) finishPromotion(ctx context.Context, mt *Mirror) (bool, error) {
	switch mt.State {
	case Promoted:
		return true, nil
	case Mirroring:
		return false, nil
	}
	n, ok := m.cfg.Host.Partitions(mt.Topic)
	if !ok {
		return false, fmt.Errorf("topic %s does not exist", mt.Topic)
	}
	lsos, err := m.cfg.Host.StableOffsets(ctx, mt.Topic, n)
	if err != nil {
		return false, nil // a leader moving: asked again
	}
	for p, target := range mt.Targets {
		if lso, ok := lsos[p]; !ok || lso < target {
			return false, nil
		}
	}
	c := *mt
	c.State, c.PromotedMs = Promoted, time.Now().UnixMilli()
	if err := m.cfg.Store.PutMirror(ctx, &c); err != nil {
		return false, err
	}
	m.cfg.Log.Info("link: mirror topic promoted", "link", mt.Link, "topic", mt.Topic, "targets", mt.Targets)
	m.Kick()
	return true, nil
}

// Counters returns what this broker mirrored of each link, for metrics.
func (m *Manager) Counters() map[string]RunnerCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]RunnerCounters{}
	for n, r := range m.runners {
		out[n] = r.counters()
	}
	return out
}

func (r *runner) counters() RunnerCounters {
	return RunnerCounters{Bytes: r.bytes.Load(), Batches: r.batches.Load(), FetchErrors: r.fetchErrors.Load()}
}

// Lags returns, for each mirror partition this broker leads, the source's
// high watermark at the last fetch minus the mirror's log end.
func (m *Manager) Lags() map[string]map[string]map[int32]int64 {
	m.mu.Lock()
	rs := make(map[string]*runner, len(m.runners))
	for n, r := range m.runners {
		rs[n] = r
	}
	m.mu.Unlock()
	out := map[string]map[string]map[int32]int64{}
	for n, r := range rs {
		r.mu.Lock()
		for k, mp := range r.parts {
			if mp.srcHW < 0 {
				continue
			}
			if out[n] == nil {
				out[n] = map[string]map[int32]int64{}
			}
			if out[n][k.topic] == nil {
				out[n][k.topic] = map[int32]int64{}
			}
			out[n][k.topic][k.partition] = max(mp.srcHW-mp.log.LogEndOffset(), 0)
		}
		r.mu.Unlock()
	}
	return out
}
