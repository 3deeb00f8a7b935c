package link

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Host is what a link needs of the broker it runs in. The broker decides
// where a request goes in a cluster (a group's commit to its coordinator,
// a partition's offsets to its leader).
type Host interface {
	// Controller reports whether this broker syncs the links' topics,
	// configs and groups: one broker of a cluster (its controller) does.
	Controller() bool
	// Partitions returns a topic's partition count; false when the topic
	// does not exist.
	Partitions(topic string) (int32, bool)
	// TopicConfigs returns the configs set on a topic.
	TopicConfigs(topic string) map[string]string
	CreateTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error
	CreatePartitions(ctx context.Context, topic string, total int32) error
	// AlterTopicConfigs sets set and removes del on a topic.
	AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error
	// Lead returns this broker's log of a partition while it leads it,
	// else nil.
	Lead(topic string, partition int32) Log
	// HighWatermarks returns each partition's high watermark, asked of
	// its leader; StableOffsets its last stable offset (the high
	// watermark, or the first offset of an open transaction below it).
	HighWatermarks(ctx context.Context, topic string, partitions int32) (map[int32]int64, error)
	StableOffsets(ctx context.Context, topic string, partitions int32) (map[int32]int64, error)
	// CommittedOffsets returns a group's committed offsets on this
	// cluster; CommitOffsets commits offsets for a group that has no
	// member (ErrGroupActive when it has).
	CommittedOffsets(ctx context.Context, group string) (map[string]map[int32]int64, error)
	CommitOffsets(ctx context.Context, group string, offsets map[string]map[int32]int64) error
	// CreateACLs adds ACL bindings (kerr.SecurityDisabled without an
	// authorizer).
	CreateACLs(ctx context.Context, bindings []kmsg.CreateACLsRequestCreation) error
	// PeerLinkStatus returns the other brokers' share of a link's status
	// (Manager.NodeStatus on each), asked of every live broker of the
	// cluster at once, and a line for each that could not be asked;
	// nothing on a single node. ctx bounds the requests.
	PeerLinkStatus(ctx context.Context, name string) ([]*NodeStatus, []string)
}

// ErrGroupActive is CommitOffsets' answer for a group with members.
var ErrGroupActive = errors.New("group has active members")

// Log is a mirror partition's log on its leader.
type Log interface {
	LogStartOffset() int64
	LogEndOffset() int64
	// AppendMirrored appends whole batches fetched from the source at
	// their own offsets (a follower's append), stamped with the
	// partition's current leader epoch. ErrNotLeader when this broker no
	// longer leads the partition.
	AppendMirrored(records []byte) error
	// RestartAt empties the log and starts it at offset (the source's log
	// start moved past everything mirrored); AdvanceLogStart moves the
	// log start offset up, as DeleteRecords does.
	RestartAt(offset int64) error
	AdvanceLogStart(offset int64) error
	// AbortOpenTransactions ends every transaction still open in the log
	// with an ABORT marker, as kafka-transactions abort does, and returns
	// what it aborted.
	AbortOpenTransactions() ([]AbortedTxn, error)
}

// AbortedTxn is a transaction a promotion aborted: its producer and the
// offset of its first record.
type AbortedTxn struct {
	ProducerID  int64
	Epoch       int16
	FirstOffset int64
}

// ErrNotLeader is a Log's answer once this broker no longer leads.
var ErrNotLeader = errors.New("no longer the leader")

// Config configures a Manager.
type Config struct {
	// NodeID is this broker's id.
	NodeID int32
	Store  *Store
	Host   Host
	Log    *slog.Logger
	// Poll is how often the manager looks at the store and at which
	// partitions it leads without being told (Kick); 1s when zero.
	Poll time.Duration
}

// Manager runs every link on one broker: each link's mirror partitions
// this broker leads are fetched from the source, and on the controller the
// link's topics, configs and groups are synced.
type Manager struct {
	cfg    Config
	kick   chan struct{}
	stop   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup

	mu      sync.Mutex
	runners map[string]*runner
}

// NewManager returns a manager; Start runs it.
func NewManager(cfg Config) *Manager {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), runners: map[string]*runner{}}
}

// Store is the manager's store.
func (m *Manager) Store() *Store { return m.cfg.Store }

// Start starts the manager's loop.
func (m *Manager) Start() {
	m.wg.Add(1)
	go m.loop()
}

// Kick makes the manager and its links look again now: the store or the
// leadership changed.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
	m.mu.Lock()
	for _, r := range m.runners {
		r.poke()
	}
	m.mu.Unlock()
}

// Close stops every link and waits for them; again, it does nothing.
func (m *Manager) Close() {
	if !m.closed.CompareAndSwap(false, true) {
		return
	}
	close(m.stop)
	m.wg.Wait()
	m.mu.Lock()
	rs := slices.Collect(maps.Values(m.runners))
	m.runners = map[string]*runner{}
	m.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
}

func (m *Manager) loop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	for {
		m.reconcile()
		select {
		case <-m.stop:
			return
		case <-m.kick:
		case <-t.C:
		}
	}
}

// reconcile starts a runner for each link and stops those of links gone.
func (m *Manager) reconcile() {
	st := m.cfg.Store.State()
	var gone []*runner
	m.mu.Lock()
	for name, r := range m.runners {
		if l := st.Links[name]; l == nil || l.CreatedMs != r.link.CreatedMs {
			gone = append(gone, r)
			delete(m.runners, name)
		}
	}
	for name, l := range st.Links {
		if m.runners[name] != nil {
			continue
		}
		r, err := newRunner(m, l)
		if err != nil {
			m.cfg.Log.Error("link: cannot start", "link", name, "err", err)
			continue
		}
		m.runners[name] = r
		go r.run()
	}
	m.mu.Unlock()
	for _, r := range gone {
		r.close()
	}
}

func (m *Manager) runner(name string) *runner {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runners[name]
}

// tp is a topic-partition.
type tp struct {
	topic     string
	partition int32
}

// mpart is a mirror partition this broker leads.
type mpart struct {
	tp
	log Log
	// srcHW is the source's high watermark in its latest answer.
	srcHW int64
	// failed holds the partition back (an error that fetching again
	// cannot mend soon) until retryAt.
	failed  string
	retryAt time.Time
}

// sourceTopic is a topic in the source cluster's metadata.
type sourceTopic struct {
	id      [16]byte
	leaders []int32 // by partition; -1 when none
}

// runner is one link on this broker.
type runner struct {
	m    *Manager
	link *Link
	cl   *kgo.Client

	pokec     chan struct{}
	syncPokec chan struct{}
	stop      chan struct{}
	done      chan struct{}

	mu    sync.Mutex
	parts map[tp]*mpart
	src   map[string]*sourceTopic // the source's metadata; nil until read
	srcAt time.Time
	// fetchErr is fetching's latest error, until a round mends it;
	// syncErr the latest sync's errors ("" once a sync had none, or
	// while this broker does not sync).
	fetchErr string
	syncErr  string
	pidFloor int64 // the highest producer id reserved
	// aclsCopied are the bindings copied from the source (syncACLs).
	aclsCopied map[string]bool
	// missing counts the syncs in a row that found no source topic for a
	// mirror (noteDeletedSources; the sync's goroutine only).
	missing map[string]int

	// down holds the source brokers whose latest fetch failed (the run
	// goroutine's only): the partitions they lead wait out that broker's
	// own backoff while those of the other brokers are fetched on.
	down map[int32]*brokerBackoff
	// backoff is the whole link's while no source broker can be asked
	// (the run goroutine's only).
	backoff time.Duration
	// inflight holds the source brokers a fetch is out to, with the
	// partitions it fetches (the run goroutine's only): a broker that does
	// not answer (stopped, its host gone, a network cut) holds back only
	// those, and is sent nothing more until it answers or times out, or
	// the source elects another leader for one of them.
	inflight map[int32]*outFetch
	results  chan fetchResult
	fetches  sync.WaitGroup
	// answered is the source broker that answered a fetch last (-1:
	// none yet), asked first for the source's metadata.
	answered atomic.Int32
	// roundWait bounds how long a round waits for its fetches' answers
	// (fetchMaxWait and a margin; a test's own otherwise).
	roundWait time.Duration
	// sourceTimeout bounds a source request but a Fetch
	// (sourceRequestTimeout; a test's own otherwise).
	sourceTimeout time.Duration
	// fetch is fetchFrom and readMetadata sourceMetadata (a test's
	// stand-ins otherwise).
	fetch        func(ctx context.Context, leader int32, parts []*mpart, src map[string]*sourceTopic) error
	readMetadata func(ctx context.Context) (map[string]*sourceTopic, error)

	// gen moves with every poke; assign's last scan of the partitions led
	// (the run goroutine's only) is kept while gen and the store's state
	// stay as they were.
	gen       atomic.Uint64
	scan      []led
	scanGen   uint64
	scanState *State
	scanAt    time.Time

	// Counters for metrics.
	bytes, batches, fetchErrors atomic.Int64
}

func newRunner(m *Manager, l *Link) (*runner, error) {
	opts, err := sourceOptions(l)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	r := &runner{m: m, link: l, cl: cl, pokec: make(chan struct{}, 1), syncPokec: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		parts: map[tp]*mpart{}, pidFloor: -1, aclsCopied: map[string]bool{}, missing: map[string]int{}, down: map[int32]*brokerBackoff{}}
	r.fetch, r.readMetadata = r.fetchFrom, r.sourceMetadata
	r.answered.Store(-1)
	r.inflight, r.results, r.roundWait = map[int32]*outFetch{}, make(chan fetchResult), fetchMaxWait+500*time.Millisecond
	r.sourceTimeout = sourceRequestTimeout
	return r, nil
}

// outFetch is a Fetch out to a source broker: its partitions, and how to
// cut it short once the source elected another leader for one of them
// (moved).
type outFetch struct {
	parts  []*mpart
	cancel context.CancelFunc
	moved  bool
}

// fetchResult is the outcome of one Fetch to a source broker.
type fetchResult struct {
	leader int32
	err    error
}

// brokerBackoff is how long a failing source broker's partitions wait
// before it is asked again: doubled by every failure from 100ms up to
// maxBackoff, forgotten at its first answer.
type brokerBackoff struct {
	wait  time.Duration
	until time.Time
}

// Backoffs of a link's fetching: a source broker's, and the whole link's
// when no source broker can be asked (the source's metadata unreadable).
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// downMetadataEvery is how often the source's metadata is read again
	// while a source broker is failing: its partitions' new leaders are
	// fetched from as soon as the source elected them.
	downMetadataEvery = time.Second
	// metadataTimeout bounds a request to the source broker that
	// answered last, before any broker is asked (askAny).
	metadataTimeout = 5 * time.Second
	// sourceRequestTimeout bounds every other request to the source but
	// a Fetch (fetchFrom has its own bound): a source broker that does
	// not answer (stopped, its host gone) fails the request instead of
	// holding whatever waits for it.
	sourceRequestTimeout = 10 * time.Second
)

func (r *runner) poke() {
	r.gen.Add(1)
	select {
	case r.pokec <- struct{}{}:
	default:
	}
	select {
	case r.syncPokec <- struct{}{}:
	default:
	}
}

func (r *runner) close() {
	close(r.stop)
	<-r.done
	r.cl.Close()
}

func (r *runner) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// fail records an error of fetching for the link's status and logs it
// when it is new.
func (r *runner) fail(what string, err error) {
	msg := what + ": " + err.Error()
	r.mu.Lock()
	same := r.fetchErr == msg
	r.fetchErr = msg
	r.mu.Unlock()
	if !same {
		r.m.cfg.Log.Warn("link: "+what, "link", r.link.Name, "err", err)
	}
}

// ok clears fetching's error: a round fetched from every source broker
// it needed.
func (r *runner) ok() {
	r.mu.Lock()
	r.fetchErr = ""
	r.mu.Unlock()
}

// run fetches the link's mirror partitions this broker leads, round after
// round, until the runner stops; the sync runs beside it in a goroutine
// of its own (syncLoop), so that neither waits for the other's source
// requests.
func (r *runner) run() {
	defer close(r.done)
	ctx, cancel := r.ctx()
	var syncing sync.WaitGroup
	syncing.Add(1)
	go func() {
		defer syncing.Done()
		r.syncLoop(ctx)
	}()
	defer syncing.Wait()
	defer r.fetches.Wait() // cut short by cancel: nothing appends after
	defer cancel()
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		var wait time.Duration
		if work := r.assign(); len(work) == 0 {
			wait = r.m.cfg.Poll
		} else {
			wait = r.fetchRound(ctx, work)
			if ctx.Err() != nil {
				return // stopping: the fetch was cut short, not failed
			}
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-r.stop:
			t.Stop()
			return
		case <-r.pokec: // leadership or the links changed: look again now
		case <-t.C:
		}
		t.Stop()
	}
}

// led is a mirror partition this broker leads, as assign last found it.
type led struct {
	k         tp
	log       Log
	promoting bool  // the topic is being promoted: fetched up to target
	target    int64 // its target; -1 when it has none
}

// rescanEvery bounds how long assign trusts its last scan without a poke
// (leadership, the links' records or a partition's leader changing all
// poke it): a topic deleted under a mirror, say.
const rescanEvery = time.Second

// assign returns the mirror partitions of the link this broker leads and
// has to fetch: every partition of a mirroring topic, of a promoting one
// those below their target. The scan of every mirror partition (which
// asks the broker whether it leads each) is kept and done again only when
// the runner was poked, the links' records changed, or rescanEvery
// passed: a fetch round costs nothing per mirror partition beyond the
// ones it fetches.
func (r *runner) assign() []*mpart {
	st := r.m.cfg.Store.State()
	gen := r.gen.Load()
	if r.scan == nil || r.scanGen != gen || r.scanState != st || time.Since(r.scanAt) >= rescanEvery {
		r.scan, r.scanGen, r.scanState, r.scanAt = r.rescan(st), gen, st, time.Now()
	}
	type work struct {
		led
		skip bool // a promoting partition at its target
	}
	leds := make([]work, 0, len(r.scan))
	for _, l := range r.scan {
		skip := false
		if l.promoting {
			skip = l.target < 0 || l.log.LogEndOffset() >= l.target
			if skip && !r.fetching(l.k) {
				r.abortOpen(l.k.topic, l.k.partition, l.log)
			}
		}
		leds = append(leds, work{l, skip})
	}
	now := time.Now()
	var out []*mpart
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[tp]bool, len(leds))
	for _, l := range leds {
		seen[l.k] = true
		mp := r.parts[l.k]
		if mp == nil || mp.log != l.log {
			mp = &mpart{tp: l.k, log: l.log, srcHW: -1}
			r.parts[l.k] = mp
		}
		if l.skip || (mp.failed != "" && now.Before(mp.retryAt)) {
			continue
		}
		out = append(out, mp)
	}
	for k := range r.parts {
		if !seen[k] {
			delete(r.parts, k)
		}
	}
	return out
}

// fetching reports whether a fetch of a partition is out (the run
// goroutine's only).
func (r *runner) fetching(k tp) bool {
	for _, of := range r.inflight {
		for _, mp := range of.parts {
			if mp.tp == k {
				return true
			}
		}
	}
	return false
}

// abortOpen aborts the transactions left open in a promoting partition
// that reached its target: their producers cannot end them here (a
// producer that moves to this cluster starts again with a new producer
// id), and an open one would hold the last stable offset, and every
// read_committed consumer, where it is forever. The promotion waits for
// it (finishPromotion checks the last stable offsets).
func (r *runner) abortOpen(topic string, p int32, log Log) {
	aborted, err := log.AbortOpenTransactions()
	if err != nil {
		r.m.cfg.Log.Warn("link: aborting the open transactions of a promoted partition", "link", r.link.Name, "topic", topic, "partition", p, "err", err)
		return
	}
	for _, a := range aborted {
		r.m.cfg.Log.Warn("link: aborted a transaction left open at the promotion (its commit, if any, was written to the source after the promotion point)",
			"link", r.link.Name, "topic", topic, "partition", p, "producer_id", a.ProducerID, "producer_epoch", a.Epoch, "first_offset", a.FirstOffset)
	}
}

// rescan lists the mirror partitions of the link this broker leads.
func (r *runner) rescan(st *State) []led {
	h := r.m.cfg.Host
	var out []led
	for _, mt := range st.MirrorsOf(r.link.Name) {
		if !mt.ReadOnly() {
			continue
		}
		n, ok := h.Partitions(mt.Topic)
		if mt.SourceDeletedMs != 0 && mt.State == Mirroring {
			ok = false // nothing to fetch any more
		}
		if !ok {
			continue
		}
		for p := range n {
			log := h.Lead(mt.Topic, p)
			if log == nil {
				continue
			}
			l := led{k: tp{mt.Topic, p}, log: log, target: -1}
			if mt.State == Promoting {
				l.promoting = true
				if t, ok := mt.Targets[p]; ok {
					l.target = t
				}
			}
			out = append(out, l)
		}
	}
	return out
}

func (r *runner) invalidateSource() {
	r.mu.Lock()
	r.src = nil
	r.mu.Unlock()
}

// source returns the source's metadata of every topic, read again when
// older than the sync interval or invalidated.
func (r *runner) source(ctx context.Context) (map[string]*sourceTopic, error) {
	r.mu.Lock()
	src, at := r.src, r.srcAt
	r.mu.Unlock()
	if src != nil && time.Since(at) < r.link.SyncInterval() {
		return src, nil
	}
	src, err := r.readMetadata(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.src, r.srcAt = src, time.Now()
	r.mu.Unlock()
	return src, nil
}

// sourceMetadata reads the source's metadata of every topic.
func (r *runner) sourceMetadata(ctx context.Context) (map[string]*sourceTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // every topic
	kr, err := r.askAny(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kr.(*kmsg.MetadataResponse)
	src := map[string]*sourceTopic{}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		st := &sourceTopic{id: t.TopicID, leaders: make([]int32, len(t.Partitions))}
		for i := range st.leaders {
			st.leaders[i] = -1
		}
		for _, p := range t.Partitions {
			if p.Partition >= 0 && int(p.Partition) < len(st.leaders) && p.ErrorCode == 0 {
				st.leaders[p.Partition] = p.Leader
			}
		}
		src[*t.Topic] = st
	}
	return src, nil
}

// Fetch sizes: as a replica fetcher's, larger per partition so that a
// partition of large batches still moves.
const (
	fetchMaxWait       = 500 * time.Millisecond
	fetchMaxBytes      = 64 << 20
	fetchPartitionMax  = 4 << 20
	partitionRetryWait = 5 * time.Second
)

// fetchRound fetches every partition in work once, one request per source
// leader at the same time, and appends what comes back. It waits for the
// answers up to roundWait and returns how long to wait before the next
// round: 0 after an answer from any source broker (a fetch waits on the
// source for records, fetchMaxWait at most) or after waiting roundWait,
// else until the first failing broker may be asked again.
//
// A source broker that fails (killed, unreachable, …) is asked again only
// after its own backoff, and only its partitions wait: those led by the
// other brokers are fetched on. One that does not answer (stopped, its
// host gone) is left with its fetch out, its partitions with it, until it
// answers or the fetch times out; the other brokers are fetched on
// meanwhile. A failing broker's error stays in the link's status until it
// answers or leads none of the partitions; the source's metadata is read
// again every downMetadataEvery meanwhile, so that its partitions move to
// the leaders the source elects in its place.
func (r *runner) fetchRound(ctx context.Context, work []*mpart) time.Duration {
	if len(r.down) > 0 || len(r.inflight) > 0 {
		r.mu.Lock()
		stale := time.Since(r.srcAt) >= downMetadataEvery
		r.mu.Unlock()
		if stale {
			r.invalidateSource()
		}
	}
	src, err := r.source(ctx)
	if err != nil && len(r.inflight) == 0 {
		return r.roundFailed(fmt.Errorf("metadata of the source: %w", err))
	}
	now := time.Now()
	busy := map[tp]bool{}
	for leader, of := range r.inflight {
		for _, mp := range of.parts {
			busy[mp.tp] = true
			// The source elected another leader for it: the fetch out to
			// the old one (which may never answer) is cut short, and the
			// partition fetched from the new one next round.
			if st := src[mp.topic]; !of.moved && st != nil && int(mp.partition) < len(st.leaders) && st.leaders[mp.partition] >= 0 && st.leaders[mp.partition] != leader {
				of.moved = true
				of.cancel()
			}
		}
	}
	byLeader := map[int32][]*mpart{}
	refresh := false
	leaders := map[int32]bool{}
	for _, mp := range work {
		if busy[mp.tp] || src == nil {
			continue // its fetch is still out
		}
		st := src[mp.topic]
		if st == nil || int(mp.partition) >= len(st.leaders) || st.leaders[mp.partition] < 0 {
			refresh = true // a topic or leader not known yet
			continue
		}
		leader := st.leaders[mp.partition]
		leaders[leader] = true
		if d := r.down[leader]; r.inflight[leader] != nil || (d != nil && now.Before(d.until)) {
			continue // one fetch at a time per broker; or its backoff
		}
		byLeader[leader] = append(byLeader[leader], mp)
	}
	for b := range r.down {
		if src != nil && !leaders[b] && r.inflight[b] == nil {
			delete(r.down, b) // it leads none of ours any more
		}
	}
	if refresh {
		r.invalidateSource()
	}
	if len(byLeader) == 0 && len(r.inflight) == 0 {
		if refresh {
			return r.roundFailed(fmt.Errorf("no leader known in the source for %d partitions", len(work)))
		}
		return r.nextUp(now) // only failing brokers' partitions: wait for the first
	}
	for leader, parts := range byLeader {
		fctx, cancel := context.WithCancel(ctx)
		r.inflight[leader] = &outFetch{parts: parts, cancel: cancel}
		r.fetches.Add(1)
		go func() {
			defer r.fetches.Done()
			err := r.fetch(fctx, leader, parts, src)
			cancel()
			select {
			case r.results <- fetchResult{leader, err}:
			case <-ctx.Done():
			}
		}()
	}
	// Every answer to this round's fetches (or, if it sent none, the first
	// to an earlier one), for roundWait at most.
	t := time.NewTimer(r.roundWait)
	defer t.Stop()
	var errs []error
	answered := 0
	for waiting := true; waiting; {
		select {
		case res := <-r.results:
			of := r.inflight[res.leader]
			delete(r.inflight, res.leader)
			delete(byLeader, res.leader)
			waiting = len(byLeader) > 0
			if of != nil && of.moved && res.err != nil {
				continue // cut short: no failure of the broker's
			}
			if res.err == nil {
				answered++
				r.answered.Store(res.leader)
				delete(r.down, res.leader)
				continue
			}
			d := r.down[res.leader]
			if d == nil {
				d = &brokerBackoff{}
				r.down[res.leader] = d
			}
			d.wait = min(max(2*d.wait, minBackoff), maxBackoff)
			d.until = time.Now().Add(d.wait)
			errs = append(errs, fmt.Errorf("source broker %d: %w", res.leader, res.err))
		case <-t.C:
			waiting = false
		case <-ctx.Done():
			return 0
		}
	}
	if answered > 0 {
		r.backoff = 0
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		r.fetchErrors.Add(1)
		r.fail("fetching from the source", errors.Join(errs...))
		r.invalidateSource() // the broker may have lost its partitions
		if answered == 0 && len(r.inflight) == 0 {
			return r.nextUp(time.Now()) // no broker answered: no busy loop
		}
		return 0
	}
	if answered > 0 && len(r.down) == 0 {
		r.ok()
	}
	return 0
}

// nextUp returns the time from now until the first failing source broker
// may be asked again.
func (r *runner) nextUp(now time.Time) time.Duration {
	wait := maxBackoff
	for _, d := range r.down {
		wait = min(wait, d.until.Sub(now))
	}
	return max(wait, time.Millisecond)
}

// roundFailed records an error that kept a whole round from fetching
// and returns the link's backoff, doubled.
func (r *runner) roundFailed(err error) time.Duration {
	r.fetchErrors.Add(1)
	r.fail("fetching from the source", err)
	r.invalidateSource()
	r.backoff = min(max(2*r.backoff, minBackoff), maxBackoff)
	return r.backoff
}

func (r *runner) fetchFrom(ctx context.Context, leader int32, parts []*mpart, src map[string]*sourceTopic) error {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = int32(fetchMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = fetchMaxBytes
	req.IsolationLevel = 0 // read_uncommitted: aborted records and markers come along
	byTopic := map[string]int{}
	for _, mp := range parts {
		i, ok := byTopic[mp.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[mp.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = mp.topic, src[mp.topic].id
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = mp.partition
		p.FetchOffset = mp.log.LogEndOffset()
		p.PartitionMaxBytes = fetchPartitionMax
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	rctx, cancel := context.WithTimeout(ctx, fetchMaxWait+30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, r.cl.Broker(int(leader)))
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	index := map[tp]*mpart{}
	for _, mp := range parts {
		index[mp.tp] = mp
	}
	for _, t := range resp.Topics {
		name := t.Topic
		if name == "" {
			for n, st := range src {
				if st.id == t.TopicID {
					name = n
				}
			}
		}
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if mp := index[tp{name, rp.Partition}]; mp != nil {
				r.apply(ctx, leader, mp, rp)
			}
		}
	}
	return nil
}

// apply appends one partition's answer.
func (r *runner) apply(ctx context.Context, leader int32, mp *mpart, rp *kmsg.FetchResponseTopicPartition) {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		r.outOfRange(ctx, leader, mp)
		return
	default:
		// Leadership moved, the topic is not there yet, …: look at the
		// source's metadata again.
		r.invalidateSource()
		r.partitionFailed(mp, fmt.Errorf("source %s-%d: %w", mp.topic, mp.partition, err), time.Second)
		return
	}
	r.mu.Lock()
	mp.srcHW = rp.HighWatermark
	r.mu.Unlock()
	if len(rp.RecordBatches) > 0 {
		if err := mp.log.AppendMirrored(rp.RecordBatches); err != nil {
			if errors.Is(err, ErrNotLeader) {
				r.gen.Add(1) // leads no more: scan again
			} else {
				r.partitionFailed(mp, fmt.Errorf("appending to %s-%d: %w", mp.topic, mp.partition, err), partitionRetryWait)
			}
			return
		}
		r.bytes.Add(int64(len(rp.RecordBatches)))
		if pid, n := maxProducerID(rp.RecordBatches); n > 0 {
			r.batches.Add(int64(n))
			r.reserve(ctx, pid)
		}
	}
	// The source's log start moved (DeleteRecords, retention): so does
	// the mirror's.
	if s := rp.LogStartOffset; s > mp.log.LogStartOffset() && s <= mp.log.LogEndOffset() {
		if err := mp.log.AdvanceLogStart(s); err != nil && !errors.Is(err, ErrNotLeader) {
			r.partitionFailed(mp, fmt.Errorf("moving the log start of %s-%d to %d: %w", mp.topic, mp.partition, s, err), partitionRetryWait)
			return
		}
	}
	r.mu.Lock()
	mp.failed = ""
	r.mu.Unlock()
}

func (r *runner) partitionFailed(mp *mpart, err error, wait time.Duration) {
	r.mu.Lock()
	first := mp.failed != err.Error()
	mp.failed, mp.retryAt = err.Error(), time.Now().Add(wait)
	r.mu.Unlock()
	if first {
		r.m.cfg.Log.Warn("link: partition held back", "link", r.link.Name, "topic", mp.topic, "partition", mp.partition, "err", err, "retry_in", wait)
	}
}

// outOfRange handles a fetch offset the source does not have: below its
// log start (records deleted before they were mirrored, or a new mirror of
// a topic whose log starts above 0), the mirror starts over at the
// source's log start; above its log end, the source lost records the
// mirror has, and the partition stops (nothing is deleted).
func (r *runner) outOfRange(ctx context.Context, leader int32, mp *mpart) {
	start, end, err := r.sourceOffsets(ctx, leader, mp)
	if err != nil {
		r.partitionFailed(mp, fmt.Errorf("offsets of source %s-%d: %w", mp.topic, mp.partition, err), time.Second)
		return
	}
	leo := mp.log.LogEndOffset()
	switch {
	case leo < start:
		r.m.cfg.Log.Info("link: the source's log starts past the mirror's end: starting over there", "link", r.link.Name, "topic", mp.topic, "partition", mp.partition, "mirror_log_end", leo, "source_log_start", start)
		if err := mp.log.RestartAt(start); err != nil && !errors.Is(err, ErrNotLeader) {
			r.partitionFailed(mp, fmt.Errorf("restarting %s-%d at %d: %w", mp.topic, mp.partition, start, err), partitionRetryWait)
		}
	case leo > end:
		r.partitionFailed(mp, fmt.Errorf("%s-%d: the mirror ends at %d, past the source's log end %d: the source lost records; mirroring of this partition is held", mp.topic, mp.partition, leo, end), time.Minute)
	default:
		r.partitionFailed(mp, fmt.Errorf("%s-%d: offset %d out of range in the source (%d-%d)", mp.topic, mp.partition, leo, start, end), time.Second)
	}
}

// sourceOffsets asks the source leader for a partition's log start and
// end offsets.
func (r *runner) sourceOffsets(ctx context.Context, leader int32, mp *mpart) (start, end int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.sourceTimeout)
	defer cancel()
	ask := func(ts int64) (int64, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = mp.topic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp = mp.partition, ts
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, r.cl.Broker(int(leader)))
		if err != nil {
			return 0, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, errors.New("malformed ListOffsets answer")
		}
		rp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			return 0, err
		}
		return rp.Offset, nil
	}
	if start, err = ask(-2); err != nil {
		return
	}
	end, err = ask(-1)
	return
}

// reserve makes this cluster's producer ids pass pid: mirrored batches
// carry the source's producer ids, and a producer of this cluster must
// never share one (the broker hands out ids above Store's floor).
func (r *runner) reserve(ctx context.Context, pid int64) {
	r.mu.Lock()
	need := pid > r.pidFloor
	r.mu.Unlock()
	if !need {
		return
	}
	// A block ahead, as Kafka's brokers take producer ids a block at a
	// time: the source's next producers (ids just above) cost no write.
	floor := pid + pidReserveAhead
	if err := r.m.cfg.Store.RaiseProducerIDFloor(ctx, r.m.cfg.NodeID, floor); err != nil {
		r.fail("reserving producer ids", err)
		return
	}
	r.mu.Lock()
	r.pidFloor = max(r.pidFloor, floor)
	r.mu.Unlock()
}

// pidReserveAhead is how far above a mirrored producer id the floor is
// raised: Kafka's producer id block size.
const pidReserveAhead = 1000

// maxProducerID returns the highest producer id among records' whole
// batches (-1 when none has one) and how many whole batches there are.
func maxProducerID(records []byte) (int64, int) {
	const (
		lengthPos = 8
		pidPos    = 43
		minSize   = 61
	)
	pid, n := int64(-1), 0
	for off := 0; len(records)-off >= minSize; {
		size := 12 + int(int32(binary.BigEndian.Uint32(records[off+lengthPos:])))
		if size < minSize || len(records)-off < size {
			break
		}
		pid = max(pid, int64(binary.BigEndian.Uint64(records[off+pidPos:])))
		n++
		off += size
	}
	return pid, n
}
