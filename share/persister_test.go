package share

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

// fakePersister is a share coordinator in memory with the fencing rules of
// coordinator.ShareCoordinator: a read with a newer leader epoch records
// it; a write from an earlier leader is FENCED_LEADER_EPOCH, one in an
// earlier state epoch FENCED_STATE_EPOCH. A write replaces the state (the
// leaders write every in-flight batch). Every call is logged.
type fakePersister struct {
	mu      sync.Mutex
	states  map[Key]coordinator.ShareSnapshot
	calls   []string
	failAll int16 // answered to every read and write when set
}

func newFakePersister() *fakePersister {
	return &fakePersister{states: map[Key]coordinator.ShareSnapshot{}}
}

// topicName renders a test topic id: its first byte.
func topicName(id [16]byte) string { return string(id[:1]) }

// topicID is the test topic id of name, its first byte.
func topicID(name string) [16]byte { return [16]byte{name[0]} }

// codeString is a kerr code's name, "ok" for 0.
func codeString(code int16) string {
	if code == 0 {
		return "ok"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

func keyString(k Key) string {
	return fmt.Sprintf("%s/%s:%d", k.Group, topicName(k.TopicID), k.Partition)
}

func batchesString(bs []coordinator.ShareStateBatch) string {
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%d-%d:%d@%d", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func (f *fakePersister) Read(k Key, leaderEpoch int32) (coordinator.ShareSnapshot, bool, int16) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAll != 0 {
		f.calls = append(f.calls, fmt.Sprintf("read %s leader=%d: %s", keyString(k), leaderEpoch, codeString(f.failAll)))
		return coordinator.ShareSnapshot{}, false, f.failAll
	}
	st, ok := f.states[k]
	if !ok {
		f.calls = append(f.calls, fmt.Sprintf("read %s leader=%d: none", keyString(k), leaderEpoch))
		return coordinator.ShareSnapshot{}, false, 0
	}
	if leaderEpoch > st.LeaderEpoch {
		st.LeaderEpoch = leaderEpoch
		f.states[k] = st
	}
	f.calls = append(f.calls, fmt.Sprintf("read %s leader=%d: state=%d start=%d %s", keyString(k), leaderEpoch, st.StateEpoch, st.StartOffset, batchesString(st.StateBatches)))
	st.StateBatches = slices.Clone(st.StateBatches)
	return st, true, 0
}

func (f *fakePersister) Write(k Key, w coordinator.ShareWrite) int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := f.failAll
	st, ok := f.states[k]
	switch {
	case code != 0:
	case ok && w.LeaderEpoch >= 0 && w.LeaderEpoch < st.LeaderEpoch:
		code = kerr.FencedLeaderEpoch.Code
	case ok && w.StateEpoch < st.StateEpoch:
		code = kerr.FencedStateEpoch.Code
	default:
		f.states[k] = coordinator.ShareSnapshot{StateEpoch: w.StateEpoch, LeaderEpoch: w.LeaderEpoch, StartOffset: w.StartOffset,
			DeliveryCompleteCount: w.DeliveryCompleteCount, StateBatches: slices.Clone(w.StateBatches)}
	}
	line := fmt.Sprintf("write %s state=%d leader=%d start=%d %s", keyString(k), w.StateEpoch, w.LeaderEpoch, w.StartOffset, batchesString(w.StateBatches))
	if code != 0 {
		line += ": " + codeString(code)
	}
	f.calls = append(f.calls, line)
	return code
}

func (f *fakePersister) Delete(group string, topic *[16]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	which := "*"
	if topic != nil {
		which = topicName(*topic)
	}
	f.calls = append(f.calls, fmt.Sprintf("delete %s/%s", group, which))
	for k := range f.states {
		if k.Group == group && (topic == nil || k.TopicID == *topic) {
			delete(f.states, k)
		}
	}
}

// takeCalls returns the calls logged since the last takeCalls, sorted
// (ReleaseMember writes a group's share-partitions in map order).
func (f *fakePersister) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	slices.Sort(out)
	return out
}

// fakeSettings are group configs and broker properties in maps; what is
// not set is package config's default.
type fakeSettings struct {
	mu     sync.Mutex
	group  map[string]string // "group/name"
	broker map[string]int64
}

var defaultGroupConfigs = map[string]string{
	"share.auto.offset.reset":       "latest",
	"share.record.lock.duration.ms": "30000",
	"share.delivery.count.limit":    "5",
	// The broker answers a group's unset config with its own property.
	"share.partition.max.record.locks": "2000",
	"share.renew.acknowledge.enable":   "true",
}

var defaultBrokerInts = map[string]int64{
	"group.share.max.share.sessions": 2000,
}

func newFakeSettings() *fakeSettings {
	return &fakeSettings{group: map[string]string{}, broker: map[string]int64{}}
}

func (s *fakeSettings) GroupConfig(group, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.group[group+"/"+name]; ok {
		return v
	}
	return defaultGroupConfigs[name]
}

func (s *fakeSettings) AutoOffsetReset(group string) (earliest, byDuration bool, d time.Duration) {
	v := s.GroupConfig(group, "share.auto.offset.reset")
	if after, ok := strings.CutPrefix(v, "by_duration:"); ok {
		d, _ = time.ParseDuration(after) // Go's notation in these tests
		return false, true, d
	}
	return v == "earliest", false, 0
}

func (s *fakeSettings) BrokerInt(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.broker[name]; ok {
		return v
	}
	return defaultBrokerInts[name]
}

func (s *fakeSettings) setGroup(group, name, value string) {
	s.mu.Lock()
	s.group[group+"/"+name] = value
	s.mu.Unlock()
}

func (s *fakeSettings) setBroker(name string, v int64) {
	s.mu.Lock()
	s.broker[name] = v
	s.mu.Unlock()
}

// fakeLeader is a led partition whose epoch and offsets a test sets.
type fakeLeader struct {
	epoch         int32
	logStart, hwm int64
	timestamps    []int64 // the record at offset i has timestamps[i]
}

func (l *fakeLeader) Topic() string         { return "t" }
func (l *fakeLeader) LeaderEpoch() int32    { return l.epoch }
func (l *fakeLeader) LogStartOffset() int64 { return l.logStart }
func (l *fakeLeader) HighWatermark() int64  { return l.hwm }

func (l *fakeLeader) OffsetForTimestamp(ts int64) (int64, bool) {
	for off, t := range l.timestamps {
		if t >= ts {
			return int64(off), true
		}
	}
	return 0, false
}

func newTestCache() (*Cache, *fakePersister, *fakeSettings) {
	p, s := newFakePersister(), newFakeSettings()
	return NewCache(p, s, slog.New(slog.NewTextHandler(io.Discard, nil))), p, s
}
