package coordinator

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a classic group's state; see doc.go for the transitions.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String returns Kafka's name of the state, as DescribeGroups and ListGroups
// report it.
func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// consumerProtocolType is the protocol type of Kafka consumers; only its
// member metadata is parsed (for subscribed topics).
const consumerProtocolType = "consumer"

type protocol struct {
	name     string
	metadata []byte
}

type member struct {
	id               string
	instanceID       string // "" for dynamic members
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []protocol // in the member's order of preference
	assignment       []byte

	join  *waiter[*kmsg.JoinGroupResponse] // non-nil while awaiting a join response
	sync  *waiter[*kmsg.SyncGroupResponse] // non-nil while awaiting a sync response
	isNew bool                             // joined but not yet through a completed join phase
	hb    timerSlot                        // session (heartbeat) expiry
}

func (m *member) awaitingJoin() bool { return m.join != nil }

// hasSatisfiedHeartbeat reports whether an expiring session timer should
// spare m: members parked in a rebalance are alive by definition, except new
// members, whose join may have been abandoned by a disconnected client.
func (m *member) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.join != nil || m.sync != nil
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether ps is exactly m's protocol list (names, order and
// metadata), i.e. a rejoin that changes nothing.
func (m *member) matches(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || !bytes.Equal(ps[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// vote returns m's most preferred protocol among candidates.
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    *string
	commitTime  time.Time
	logOffset   int64 // of its __consumer_offsets record; -1 for none
}

type group struct {
	id         string
	state      groupState
	prevState  groupState
	stateTime  time.Time // when state was entered; the base of offset retention once Empty
	generation int32

	protocolType string // "" until the first member joins (or forever, for simple groups)
	protocol     string // selected protocol of the current generation
	leader       string

	members map[string]*member
	order   []string          // member ids in join order: leader succession and output order
	static  map[string]string // group.instance.id → member id
	pending map[string]*timerSlot
	// pendingSync holds members of the current generation that have not
	// sent SyncGroup yet.
	pendingSync map[string]bool

	newMemberAdded bool // a member joined during the initial delay; extend it
	joinTimer      timerSlot
	syncTimer      timerSlot

	// subscribed is the union of the members' subscribed topics for the
	// selected protocol, when known (consumer protocol, parseable metadata).
	subscribed      map[string]bool
	subscribedKnown bool

	offsets map[string]map[int32]offsetEntry

	// cg is the membership of a consumer-protocol (KIP-848) group, nil for
	// classic groups (consumer.go). A consumer group's state is Empty
	// without members and Stable otherwise; cg.state() is what is reported.
	cg *consumerGroup
	// st is the membership of a streams group (KIP-1071, streams.go), nil
	// for the other kinds; like cg, Empty without members, else Stable.
	st *streamsGroup
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:         id,
		state:      stateEmpty,
		prevState:  stateEmpty,
		stateTime:  now,
		members:    make(map[string]*member),
		static:     make(map[string]string),
		pending:    make(map[string]*timerSlot),
		offsets:    make(map[string]map[int32]offsetEntry),
		subscribed: make(map[string]bool),
	}
}

func (g *group) transition(s groupState, now time.Time) {
	g.prevState = g.state
	g.state = s
	g.stateTime = now
}

// canRebalance reports whether PreparingRebalance may be entered from the
// current state.
func (g *group) canRebalance() bool {
	return g.state == stateEmpty || g.state == stateStable || g.state == stateCompletingRebalance
}

func (g *group) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.awaitingJoin() {
			n++
		}
	}
	return n
}

func (g *group) hasAllMembersJoined() bool {
	return g.numAwaitingJoin() == len(g.members) && len(g.pending) == 0
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocols reports whether a member with this protocol type and
// these protocols may join: an Empty group takes any non-empty set; otherwise
// the type must match and one protocol must be supported by every member.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.state == stateEmpty {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportCount(p.name) == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) supportCount(name string) int {
	n := 0
	for _, m := range g.members {
		for _, p := range m.protocols {
			if p.name == name {
				n++
				break
			}
		}
	}
	return n
}

// selectProtocol picks, among the protocols every member supports, the one
// most members prefer; ties go to the protocol voted for first in join order.
func (g *group) selectProtocol() string {
	candidates := make(map[string]bool)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.supportCount(p.name) == len(g.members) {
				candidates[p.name] = true
			}
		}
	}
	votes := make(map[string]int)
	var first []string
	for _, id := range g.order {
		v := g.members[id].vote(candidates)
		if votes[v] == 0 {
			first = append(first, v)
		}
		votes[v]++
	}
	best := ""
	for _, name := range first {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// validateMember checks a (member id, instance id) pair against the group:
// an instance id mapped to another member id is fenced.
func (g *group) validateMember(memberID, instanceID string) *kerr.Error {
	if instanceID != "" {
		existing, ok := g.static[instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if existing != memberID {
			return kerr.FencedInstanceID
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID
	}
	return nil
}

// add puts m in the group; the first member fixes the protocol type and the
// first member without a leader becomes leader.
func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	delete(g.pending, m.id)
}

// remove drops a member; a removed leader is succeeded by the oldest member.
func (g *group) remove(id string) {
	if m, ok := g.members[id]; ok {
		delete(g.members, id)
		if m.instanceID != "" && g.static[m.instanceID] == id {
			delete(g.static, m.instanceID)
		}
		for i, o := range g.order {
			if o == id {
				g.order = append(g.order[:i:i], g.order[i+1:]...)
				break
			}
		}
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else hands
// leadership to the first member that did; false if none did.
func (g *group) maybeElectNewJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].awaitingJoin() {
		return true
	}
	for _, id := range g.order {
		if g.members[id].awaitingJoin() {
			g.leader = id
			return true
		}
	}
	return false
}

// computeSubscribed parses the consumer-protocol metadata of every member for
// the selected protocol to learn the group's subscribed topics.
func (g *group) computeSubscribed() {
	g.subscribed = make(map[string]bool)
	g.subscribedKnown = false
	if g.protocolType != consumerProtocolType {
		return
	}
	if len(g.members) == 0 {
		g.subscribedKnown = true
		return
	}
	if g.protocol == "" {
		return
	}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			g.subscribed = make(map[string]bool)
			return
		}
		for _, t := range md.Topics {
			g.subscribed[t] = true
		}
	}
	g.subscribedKnown = true
}

// isSubscribedToTopic reports whether members consume topic; unknown
// subscriptions of a consumer group count as subscribed to everything.
func (g *group) isSubscribedToTopic(topic string) bool {
	if g.cg != nil {
		return g.cg.subscribesTo(topic)
	}
	if g.st != nil {
		return g.st.subscribesTo(topic)
	}
	if g.subscribedKnown {
		return g.subscribed[topic]
	}
	return g.protocolType == consumerProtocolType
}

// currentMembers lists members with their metadata for the selected
// protocol, as the leader's JoinGroup response carries them.
func (g *group) currentMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = id
		jm.InstanceID = strPtr(m.instanceID)
		jm.ProtocolMetadata = m.metadataFor(g.protocol)
		out = append(out, jm)
	}
	return out
}

// strPtr returns nil for "", else &s.
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
