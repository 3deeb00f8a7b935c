package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/metastore"
)

// A Link is one link's definition, as created.
type Link struct {
	Name string `json:"name"`
	// Source is the source cluster's bootstrap servers, HOST:PORT each.
	Source []string `json:"source"`
	// SourceConfig is a Kafka client's properties for the source
	// (security.protocol, sasl.*, ssl.*).
	SourceConfig map[string]string `json:"source_config,omitempty"`
	// Topics and Groups are regular expressions matched against whole
	// names (Kafka's include lists); an empty Groups syncs no group.
	Topics string `json:"topics"`
	Groups string `json:"groups,omitempty"`
	// SyncIntervalMs is how often topics, configs and group offsets are
	// synced.
	SyncIntervalMs int64 `json:"sync_interval_ms"`
	CreatedMs      int64 `json:"created_ms"`
}

// DefaultSyncInterval is a link's sync interval when none is given.
const DefaultSyncInterval = 5 * time.Second

// SyncInterval is l's sync interval.
func (l *Link) SyncInterval() time.Duration {
	if l.SyncIntervalMs <= 0 {
		return DefaultSyncInterval
	}
	return time.Duration(l.SyncIntervalMs) * time.Millisecond
}

var linkName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// Validate checks a definition before it is stored.
func (l *Link) Validate() error {
	if !linkName.MatchString(l.Name) {
		return fmt.Errorf("%w: link name %q: want 1 to 249 of [A-Za-z0-9._-]", ErrInvalid, l.Name)
	}
	if len(l.Source) == 0 {
		return fmt.Errorf("%w: no source bootstrap servers", ErrInvalid)
	}
	for _, s := range l.Source {
		if i := strings.LastIndexByte(s, ':'); i <= 0 || i == len(s)-1 {
			return fmt.Errorf("%w: source %q: want HOST:PORT", ErrInvalid, s)
		}
	}
	if l.Topics == "" {
		return fmt.Errorf("%w: no topics pattern", ErrInvalid)
	}
	if _, err := compileWhole(l.Topics); err != nil {
		return fmt.Errorf("%w: topics %q: %v", ErrInvalid, l.Topics, err)
	}
	if l.Groups != "" {
		if _, err := compileWhole(l.Groups); err != nil {
			return fmt.Errorf("%w: groups %q: %v", ErrInvalid, l.Groups, err)
		}
	}
	if l.SyncIntervalMs < 0 {
		return fmt.Errorf("%w: negative sync interval", ErrInvalid)
	}
	if _, err := sourceOptions(l); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// compileWhole compiles a pattern that must match a whole name.
func compileWhole(p string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + p + `)$`)
}

// MirrorState is a mirror topic's state.
type MirrorState string

const (
	// Mirroring: the topic follows its source and refuses produce.
	Mirroring MirrorState = "MIRRORING"
	// Promoting: the topic is mirrored up to the source's high watermark
	// as of the promotion (Mirror.Targets), then becomes writable.
	Promoting MirrorState = "PROMOTING"
	// Promoted: an ordinary topic, no longer mirrored (until its link is
	// deleted, which forgets it).
	Promoted MirrorState = "PROMOTED"
)

// Mirror is one mirror topic: created by its link, which owns it until it
// is promoted.
type Mirror struct {
	Link  string      `json:"link"`
	Topic string      `json:"topic"`
	State MirrorState `json:"state"`
	// Targets are, while promoting, the source's high watermark of each
	// partition when the promotion began.
	Targets    map[int32]int64 `json:"targets,omitempty"`
	CreatedMs  int64           `json:"created_ms"`
	PromotedMs int64           `json:"promoted_ms,omitempty"`
	// SourceTopicID is the source topic's id (hex), learned at the first
	// sync that sees it: a source topic of that name with another id is
	// another topic.
	SourceTopicID string `json:"source_topic_id,omitempty"`
	// SourceDeletedMs is when the source topic was found deleted (or
	// deleted and created again): mirroring stopped there, what was
	// mirrored stays, and a promotion takes the mirror's own ends.
	SourceDeletedMs int64 `json:"source_deleted_ms,omitempty"`
}

// ReadOnly reports whether the topic refuses produce: until promoted.
func (m *Mirror) ReadOnly() bool { return m.State == Mirroring || m.State == Promoting }

// GroupSync is what a link last copied of one consumer group's committed
// offsets.
type GroupSync struct {
	Link    string                     `json:"link"`
	Group   string                     `json:"group"`
	Offsets map[string]map[int32]int64 `json:"offsets"`
	// SyncedMs is when the offsets were last copied.
	SyncedMs int64 `json:"synced_ms"`
	// TakenOverMs is set once the group committed on Gregor itself
	// (its consumers moved): the link no longer copies its offsets.
	TakenOverMs int64 `json:"taken_over_ms,omitempty"`
}

// Errors of the store's operations.
var (
	ErrInvalid       = errors.New("invalid link")
	ErrExists        = errors.New("link already exists")
	ErrNotFound      = errors.New("no such link")
	ErrActiveMirrors = errors.New("link has mirror topics not promoted")
)

// Records are keyed by link name: "<link>" its definition,
// "<link>/topics/<topic>" a mirror topic, "<link>/groups/<group>" a
// group's sync.
func linkKey(name string) string          { return name }
func mirrorKey(link, topic string) string { return link + "/topics/" + topic }
func groupKey(link, group string) string  { return link + "/groups/" + group }

// pidsKey is the prefix of the records of the highest producer id
// mirrored, one per broker ("@producer-ids/<node id>"), each written by
// its broker alone.
const pidsKey = "@producer-ids/"

type pidFloor struct {
	Floor int64 `json:"floor"`
}

// State is the decoded collection: every link, mirror topic and group
// sync. Shared: callers must not modify it.
type State struct {
	Links   map[string]*Link
	Mirrors map[string]*Mirror               // by topic
	Groups  map[string]map[string]*GroupSync // by link, then group
	// ProducerIDFloor is the highest producer id mirrored; -1 when none.
	ProducerIDFloor int64
	// topics and groups compiled, by link
	topics, groups map[string]*regexp.Regexp
}

// MirrorsOf returns link's mirror topics, by name.
func (s *State) MirrorsOf(link string) []*Mirror {
	var out []*Mirror
	for _, t := range slices.Sorted(maps.Keys(s.Mirrors)) {
		if m := s.Mirrors[t]; m.Link == link {
			out = append(out, m)
		}
	}
	return out
}

func decodeState(recs metastore.Records) *State {
	s := &State{Links: map[string]*Link{}, Mirrors: map[string]*Mirror{}, Groups: map[string]map[string]*GroupSync{},
		topics: map[string]*regexp.Regexp{}, groups: map[string]*regexp.Regexp{}, ProducerIDFloor: -1}
	for k, v := range recs {
		if strings.HasPrefix(k, pidsKey) {
			var f pidFloor
			if json.Unmarshal(v, &f) == nil {
				s.ProducerIDFloor = max(s.ProducerIDFloor, f.Floor)
			}
			continue
		}
		name, rest, sub := strings.Cut(k, "/")
		switch kind, id, _ := strings.Cut(rest, "/"); {
		case !sub:
			var l Link
			if json.Unmarshal(v, &l) == nil {
				s.Links[name] = &l
			}
		case kind == "topics":
			var m Mirror
			if json.Unmarshal(v, &m) == nil {
				s.Mirrors[id] = &m
			}
		case kind == "groups":
			var g GroupSync
			if json.Unmarshal(v, &g) == nil {
				if s.Groups[name] == nil {
					s.Groups[name] = map[string]*GroupSync{}
				}
				s.Groups[name][id] = &g
			}
		}
	}
	for name, l := range s.Links {
		if re, err := compileWhole(l.Topics); err == nil {
			s.topics[name] = re
		}
		if l.Groups != "" {
			if re, err := compileWhole(l.Groups); err == nil {
				s.groups[name] = re
			}
		}
	}
	return s
}

// Store keeps the links in a metastore collection ("links": a file under
// __meta on one node, etcd's /gregor/links/ in a cluster).
type Store struct {
	view  *metastore.View[*State]
	pidMu sync.Mutex // one RaiseProducerIDFloor at a time
}

// NewStore returns the store of c.
func NewStore(c metastore.Collection) *Store {
	return &Store{view: metastore.NewView(c, decodeState)}
}

// State returns the links as of the collection's latest revision.
func (s *Store) State() *State { return s.view.Get() }

// Revision is the collection's revision.
func (s *Store) Revision() int64 {
	_, rev := s.view.Collection().Snapshot()
	return rev
}

func (s *Store) put(ctx context.Context, put map[string]any, del []string) error {
	recs := metastore.Records{}
	for k, v := range put {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		recs[k] = b
	}
	_, err := s.view.Collection().Update(ctx, recs, del)
	return err
}

// Create stores a new link.
func (s *Store) Create(ctx context.Context, l *Link) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if s.State().Links[l.Name] != nil {
		return fmt.Errorf("%w: %s", ErrExists, l.Name)
	}
	return s.put(ctx, map[string]any{linkKey(l.Name): l}, nil)
}

// Delete removes a link and all its records. Its mirror topics must all be
// promoted, unless force: those still mirroring then stop where they are.
// Either way the topics stay, as ordinary topics (another link matching
// one of them leaves it alone: it exists and is not its mirror).
func (s *Store) Delete(ctx context.Context, name string, force bool) error {
	st := s.State()
	if st.Links[name] == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	del := []string{linkKey(name)}
	for _, m := range st.MirrorsOf(name) {
		if m.ReadOnly() && !force {
			return fmt.Errorf("%w: %s is %s (promote it, or delete with --force to stop mirroring)", ErrActiveMirrors, m.Topic, m.State)
		}
		del = append(del, mirrorKey(name, m.Topic))
	}
	for g := range st.Groups[name] {
		del = append(del, groupKey(name, g))
	}
	return s.put(ctx, nil, del)
}

// PutMirror stores a mirror topic's state.
func (s *Store) PutMirror(ctx context.Context, m *Mirror) error {
	return s.put(ctx, map[string]any{mirrorKey(m.Link, m.Topic): m}, nil)
}

// DeleteMirror forgets a mirror topic (its topic was deleted).
func (s *Store) DeleteMirror(ctx context.Context, m *Mirror) error {
	return s.put(ctx, nil, []string{mirrorKey(m.Link, m.Topic)})
}

// PutGroup stores a group's sync.
func (s *Store) PutGroup(ctx context.Context, g *GroupSync) error {
	return s.put(ctx, map[string]any{groupKey(g.Link, g.Group): g}, nil)
}

// RaiseProducerIDFloor records that broker node mirrored producer id id.
// Each broker writes its own record, one raise at a time.
func (s *Store) RaiseProducerIDFloor(ctx context.Context, node int32, id int64) error {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	if id <= s.State().ProducerIDFloor {
		return nil
	}
	return s.put(ctx, map[string]any{pidsKey + strconv.Itoa(int(node)): pidFloor{Floor: id}}, nil)
}

// ReadOnly returns the link whose mirror topic refuses produce, or "".
func (s *Store) ReadOnly(topic string) string {
	if m := s.State().Mirrors[topic]; m != nil && m.ReadOnly() {
		return m.Link
	}
	return ""
}
