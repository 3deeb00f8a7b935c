package link

import (
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

// Status is a link's state as `gregor link status` shows it.
type Status struct {
	Link    *Link           `json:"link"`
	Error   string          `json:"error,omitempty"` // the latest error this broker saw, if not mended since
	Mirrors []MirrorStatus  `json:"mirrors"`
	Groups  []*GroupSync    `json:"groups"`
	Metrics *RunnerCounters `json:"metrics,omitempty"`
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
// the mirror's, and the difference. -1 when not known.
type PartitionStatus struct {
	Partition int32 `json:"partition"`
	SourceEnd int64 `json:"source_end"`
	MirrorEnd int64 `json:"mirror_end"`
	Lag       int64 `json:"lag"`
}

// RunnerCounters are what this broker mirrored of the link.
type RunnerCounters struct {
	Bytes       int64 `json:"bytes"`
	Batches     int64 `json:"batches"`
	FetchErrors int64 `json:"fetch_errors"`
}

// Status reads a link's state: its mirror topics with each partition's
// end offsets in the source and here.
func (m *Manager) Status(ctx context.Context, name string) (*Status, error) {
	st := m.cfg.Store.State()
	l := st.Links[name]
	if l == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	s := &Status{Link: l}
	r := m.runner(name)
	var adm *kadm.Client
	if r != nil {
		r.mu.Lock()
		s.Error = strings.Join(slices.DeleteFunc([]string{r.fetchErr, r.syncErr}, func(e string) bool { return e == "" }), "; ")
		r.mu.Unlock()
		c := r.counters()
		s.Metrics = &c
		adm = kadm.NewClient(r.cl)
	}
	mirrors := st.MirrorsOf(name)
	var topics []string
	for _, mt := range mirrors {
		if mt.SourceDeletedMs == 0 {
			topics = append(topics, mt.Topic)
		}
	}
	var srcEnds kadm.ListedOffsets
	if adm != nil && len(topics) > 0 {
		var err error
		if srcEnds, err = adm.ListEndOffsets(ctx, topics...); err != nil && s.Error == "" {
			s.Error = "source end offsets: " + err.Error()
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
			ps := PartitionStatus{Partition: p, SourceEnd: -1, MirrorEnd: -1, Lag: -1}
			if o, ok := srcEnds.Lookup(mt.Topic, p); ok && o.Err == nil {
				ps.SourceEnd = o.Offset
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
