package coordinator

// Streams groups in __consumer_offsets, as Kafka 4.x keeps them
// (group-coordinator/src/main/resources/common/message/StreamsGroup*.json),
// encoded like the consumer group records of grouprecords.go: a key is its
// type as an int16 followed by the group id (and the member id for
// per-member records), int16-length strings; a value is an int16 version
// (0) followed by flexible fields.
//
//	17 StreamsGroupMetadata              Epoch int32, MetadataHash int64,
//	                                     AssignmentConfigs [Key, Value],
//	                                     tag 0 ValidatedTopologyEpoch int32 (default -1)
//	18 StreamsGroupPartitionMetadata     not written (MetadataHash replaced it); read and ignored
//	19 StreamsGroupMemberMetadata        per member: InstanceId?, RackId?, ClientId, ClientHost,
//	                                     RebalanceTimeoutMs, TopologyEpoch, ProcessId,
//	                                     UserEndpoint? {Host, Port uint16}, ClientTags [Key, Value]
//	20 StreamsGroupTargetAssignmentMetadata  AssignmentEpoch int32
//	21 StreamsGroupTargetAssignmentMember    per member: ActiveTasks, StandbyTasks, WarmupTasks
//	22 StreamsGroupCurrentMemberAssignment   per member: MemberEpoch, PreviousMemberEpoch, State int8,
//	                                     Active/Standby/WarmupTasks, and the three pending revocation
//	23 StreamsGroupTopology              Epoch int32, Subtopologies [SubtopologyId, SourceTopics,
//	                                     SourceTopicRegex, StateChangelogTopics [TopicInfo],
//	                                     RepartitionSinkTopics, RepartitionSourceTopics [TopicInfo],
//	                                     CopartitionGroups [SourceTopics, SourceTopicRegex,
//	                                     RepartitionSourceTopics: int16 indexes]]
//
// TaskIds is {SubtopologyId string, Partitions [int32]}, and in the active
// tasks (assigned and pending revocation) of the current assignment the
// tagged AssignmentEpochs [int32] (tag 0, aligned with Partitions: the
// epoch at which each task was given, which older-epoch commits are
// checked against; a record without them gives max(member epoch, 0), as
// Kafka reads it); TopicInfo is
// {Name, Partitions int32, ReplicationFactor int16, TopicConfigs [key,
// value]}. A nullable struct is an int8 (-1 null, 1 present) followed by
// its fields. MetadataHash is Gregor's, as for consumer groups: an FNV-1a
// hash of the topology epoch and the partition counts of the topics the
// configured topology read; a group loaded with another hash bumps its
// epoch at the next heartbeat.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Key types of streams group records.
const (
	keyStreamsGroupMetadata          int16 = 17
	keyStreamsGroupPartitionMetadata int16 = 18 // read and ignored
	keyStreamsGroupMember            int16 = 19
	keyStreamsGroupTargetMetadata    int16 = 20
	keyStreamsGroupTargetMember      int16 = 21
	keyStreamsGroupCurrentAssignment int16 = 22
	keyStreamsGroupTopology          int16 = 23
)

// Kafka's streams MemberState values.
const (
	streamsMemberStable     int8 = 0
	streamsMemberUnrevoked  int8 = 1
	streamsMemberUnreleased int8 = 2
)

// streamsNumStandbyConfig is the assignment config the group metadata
// record carries.
const streamsNumStandbyConfig = "num.standby.replicas"

type streamsGroupMetadataValue struct {
	Epoch                  int32
	MetadataHash           int64
	AssignmentConfigs      [][2]string
	ValidatedTopologyEpoch int32 // -1: none
}

func appendKVs(b []byte, kvs [][2]string) []byte {
	b = kbin.AppendCompactArrayLen(b, len(kvs))
	for _, kv := range kvs {
		b = kbin.AppendCompactString(b, kv[0])
		b = kbin.AppendCompactString(b, kv[1])
		b = appendNoTags(b)
	}
	return b
}

func (r *vreader) kvs() [][2]string {
	n := r.CompactArrayLen()
	if n < 0 || int(n)*3 > len(r.Src) {
		r.Span(len(r.Src) + 1)
		return nil
	}
	out := make([][2]string, 0, n)
	for range n {
		kv := [2]string{r.CompactString(), r.CompactString()}
		r.tags(nil)
		out = append(out, kv)
	}
	return out
}

func (v *streamsGroupMetadataValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.Epoch)
	b = kbin.AppendInt64(b, v.MetadataHash)
	b = appendKVs(b, v.AssignmentConfigs)
	if v.ValidatedTopologyEpoch == -1 {
		return appendNoTags(b)
	}
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, 4)
	return kbin.AppendInt32(b, v.ValidatedTopologyEpoch)
}

func decodeStreamsGroupMetadata(b []byte) (v streamsGroupMetadataValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.Epoch, v.MetadataHash = r.Int32(), r.Int64()
	v.AssignmentConfigs = r.kvs()
	v.ValidatedTopologyEpoch = -1
	r.tags(func(tag uint32, f *kbin.Reader) {
		if tag == 0 {
			v.ValidatedTopologyEpoch = f.Int32()
		}
	})
	return v, r.done()
}

type streamsMemberValue struct {
	InstanceID, RackID   *string
	ClientID, ClientHost string
	RebalanceTimeoutMs   int32
	TopologyEpoch        int32
	ProcessID            string
	UserEndpoint         *streamsEndpoint
	ClientTags           [][2]string
}

func (v *streamsMemberValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, v.InstanceID)
	b = kbin.AppendCompactNullableString(b, v.RackID)
	b = kbin.AppendCompactString(b, v.ClientID)
	b = kbin.AppendCompactString(b, v.ClientHost)
	b = kbin.AppendInt32(b, v.RebalanceTimeoutMs)
	b = kbin.AppendInt32(b, v.TopologyEpoch)
	b = kbin.AppendCompactString(b, v.ProcessID)
	if v.UserEndpoint == nil {
		b = kbin.AppendInt8(b, -1)
	} else {
		b = kbin.AppendInt8(b, 1)
		b = kbin.AppendCompactString(b, v.UserEndpoint.host)
		b = kbin.AppendUint16(b, v.UserEndpoint.port)
		b = appendNoTags(b)
	}
	b = appendKVs(b, v.ClientTags)
	return appendNoTags(b)
}

func decodeStreamsMember(b []byte) (v streamsMemberValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.InstanceID, v.RackID = r.CompactNullableString(), r.CompactNullableString()
	v.ClientID, v.ClientHost = r.CompactString(), r.CompactString()
	v.RebalanceTimeoutMs, v.TopologyEpoch = r.Int32(), r.Int32()
	v.ProcessID = r.CompactString()
	if r.Int8() >= 0 {
		v.UserEndpoint = &streamsEndpoint{host: r.CompactString(), port: r.Uint16()}
		r.tags(nil)
	}
	v.ClientTags = r.kvs()
	r.tags(nil)
	return v, r.done()
}

func appendTaskIDs(b []byte, a partitionSet) []byte {
	return appendTaskIDsEpochs(b, a, nil)
}

// appendTaskIDsEpochs appends a TaskIds array; with epochOf, each entry
// carries the tagged AssignmentEpochs (tag 0, aligned with Partitions), as
// Kafka 4.4 writes them for active tasks.
func appendTaskIDsEpochs(b []byte, a partitionSet, epochOf func(sub string, p int32) int32) []byte {
	subs := make([]string, 0, len(a))
	for _, s := range sortedKeys(a) {
		if len(a[s]) > 0 {
			subs = append(subs, s)
		}
	}
	b = kbin.AppendCompactArrayLen(b, len(subs))
	for _, s := range subs {
		b = kbin.AppendCompactString(b, s)
		b = appendInt32s(b, a[s])
		if epochOf == nil {
			b = appendNoTags(b)
			continue
		}
		es := make([]int32, len(a[s]))
		for i, p := range a[s] {
			es[i] = epochOf(s, p)
		}
		f := appendInt32s(nil, es)
		b = kbin.AppendUvarint(b, 1) // one tagged field
		b = kbin.AppendUvarint(b, 0) // tag 0
		b = kbin.AppendUvarint(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

func (r *vreader) taskIDs() partitionSet {
	a, _ := r.taskIDsEpochs()
	return a
}

// taskIDsEpochs reads a TaskIds array and the AssignmentEpochs its entries
// carry (entries without them, or whose epochs do not line up with their
// partitions, have none).
func (r *vreader) taskIDsEpochs() (partitionSet, partEpochs) {
	n := r.CompactArrayLen()
	out := partitionSet{}
	if n < 0 || int(n)*3 > len(r.Src) {
		r.Span(len(r.Src) + 1)
		return out, nil
	}
	var epochs partEpochs
	for range n {
		sub := r.CompactString()
		ps := r.int32s()
		for _, p := range ps {
			out.add(sub, p)
		}
		r.tags(func(tag uint32, f *kbin.Reader) {
			if tag != 0 {
				return
			}
			es, bad := readNullableInt32s(f)
			if bad || es == nil || len(es) != len(ps) {
				return
			}
			if epochs == nil {
				epochs = partEpochs{}
			}
			m := map[int32]int32{}
			for i, p := range ps {
				m[p] = es[i]
			}
			epochs[sub] = m
		})
	}
	return out, epochs
}

func encodeStreamsTarget(a streamsAssignment) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendTaskIDs(b, a.active)
	b = appendTaskIDs(b, a.standby)
	b = appendTaskIDs(b, a.warmup)
	return appendNoTags(b)
}

func decodeStreamsTarget(b []byte) (a streamsAssignment, err error) {
	r, err := newVReader(b)
	if err != nil {
		return a, err
	}
	a = streamsAssignment{r.taskIDs(), r.taskIDs(), r.taskIDs()}
	r.tags(nil)
	return a, r.done()
}

type streamsCurrentValue struct {
	MemberEpoch, PreviousMemberEpoch int32
	State                            int8
	Assigned, Revoking               streamsAssignment
	// Epochs are the assignment epochs of the active tasks (assigned and
	// pending revocation), the AssignmentEpochs of their TaskIds.
	Epochs partEpochs
}

func (v *streamsCurrentValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.MemberEpoch)
	b = kbin.AppendInt32(b, v.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, v.State)
	epochOf := func(sub string, p int32) int32 {
		if e, ok := v.Epochs[sub][p]; ok {
			return e
		}
		return max(v.MemberEpoch, 0)
	}
	b = appendTaskIDsEpochs(b, v.Assigned.active, epochOf)
	b = appendTaskIDs(b, v.Assigned.standby)
	b = appendTaskIDs(b, v.Assigned.warmup)
	b = appendTaskIDsEpochs(b, v.Revoking.active, epochOf)
	b = appendTaskIDs(b, v.Revoking.standby)
	b = appendTaskIDs(b, v.Revoking.warmup)
	return appendNoTags(b)
}

func decodeStreamsCurrent(b []byte) (v streamsCurrentValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.MemberEpoch, v.PreviousMemberEpoch, v.State = r.Int32(), r.Int32(), r.Int8()
	active, e1 := r.taskIDsEpochs()
	v.Assigned = streamsAssignment{active, r.taskIDs(), r.taskIDs()}
	revoking, e2 := r.taskIDsEpochs()
	v.Revoking = streamsAssignment{revoking, r.taskIDs(), r.taskIDs()}
	for _, es := range []partEpochs{e1, e2} {
		for sub, ps := range es {
			for p, e := range ps {
				if v.Epochs == nil {
					v.Epochs = partEpochs{}
				}
				if v.Epochs[sub] == nil {
					v.Epochs[sub] = map[int32]int32{}
				}
				v.Epochs[sub][p] = e
			}
		}
	}
	r.tags(nil)
	return v, r.done()
}

func appendTopicInfos(b []byte, ts []kmsg.TopicInfo) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for _, t := range ts {
		b = kbin.AppendCompactString(b, t.Topic)
		b = kbin.AppendInt32(b, t.NumPartitions)
		b = kbin.AppendInt16(b, t.ReplicationFactor)
		b = kbin.AppendCompactArrayLen(b, len(t.Configs))
		for _, c := range t.Configs {
			b = kbin.AppendCompactString(b, c.Key)
			b = kbin.AppendCompactString(b, c.Value)
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return b
}

func (r *vreader) topicInfos() []kmsg.TopicInfo {
	n := r.CompactArrayLen()
	if n < 0 || int(n)*9 > len(r.Src) {
		r.Span(len(r.Src) + 1)
		return nil
	}
	out := make([]kmsg.TopicInfo, 0, n)
	for range n {
		t := kmsg.NewTopicInfo()
		t.Topic, t.NumPartitions, t.ReplicationFactor = r.CompactString(), r.Int32(), r.Int16()
		for _, kv := range r.kvs() {
			t.Configs = append(t.Configs, kmsg.TopicInfoConfig{Key: kv[0], Value: kv[1]})
		}
		r.tags(nil)
		out = append(out, t)
	}
	return out
}

func appendInt16s(b []byte, is []int16) []byte {
	b = kbin.AppendCompactArrayLen(b, len(is))
	for _, i := range is {
		b = kbin.AppendInt16(b, i)
	}
	return b
}

func (r *vreader) int16s() []int16 {
	n := r.CompactArrayLen()
	if n < 0 || int(n)*2 > len(r.Src) {
		r.Span(len(r.Src) + 1)
		return nil
	}
	out := make([]int16, 0, n)
	for range n {
		out = append(out, r.Int16())
	}
	return out
}

func (t *streamsTopology) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, t.epoch)
	b = kbin.AppendCompactArrayLen(b, len(t.subtopologies))
	for _, st := range t.subtopologies {
		b = kbin.AppendCompactString(b, st.SubtopologyID)
		b = appendStrings(b, st.SourceTopics)
		b = appendStrings(b, st.SourceTopicRegex)
		b = appendTopicInfos(b, st.StateChangelogTopics)
		b = appendStrings(b, st.RepartitionSinkTopics)
		b = appendTopicInfos(b, st.RepartitionSourceTopics)
		b = kbin.AppendCompactArrayLen(b, len(st.CopartitionGroups))
		for _, cg := range st.CopartitionGroups {
			b = appendInt16s(b, cg.SourceTopics)
			b = appendInt16s(b, cg.SourceTopicRegex)
			b = appendInt16s(b, cg.RepartitionSourceTopics)
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func decodeStreamsTopology(b []byte) (*streamsTopology, error) {
	r, err := newVReader(b)
	if err != nil {
		return nil, err
	}
	t := &streamsTopology{epoch: r.Int32()}
	n := r.CompactArrayLen()
	if n < 0 || int(n)*7 > len(r.Src) {
		return nil, errBadRecord
	}
	for range n {
		st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		st.SubtopologyID = r.CompactString()
		st.SourceTopics, st.SourceTopicRegex = r.strings(), r.strings()
		st.StateChangelogTopics = r.topicInfos()
		st.RepartitionSinkTopics = r.strings()
		st.RepartitionSourceTopics = r.topicInfos()
		m := r.CompactArrayLen()
		if m < 0 || int(m)*4 > len(r.Src) {
			return nil, errBadRecord
		}
		for range m {
			cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
			cg.SourceTopics, cg.SourceTopicRegex, cg.RepartitionSourceTopics = r.int16s(), r.int16s(), r.int16s()
			r.tags(nil)
			st.CopartitionGroups = append(st.CopartitionGroups, cg)
		}
		r.tags(nil)
		t.subtopologies = append(t.subtopologies, st)
	}
	r.tags(nil)
	if err := r.done(); err != nil {
		return nil, err
	}
	if msg := validateTopology(&kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: t.epoch, Subtopologies: t.subtopologies}); msg != "" {
		return nil, errBadRecord
	}
	return t, nil
}

func streamsMemberStateCode(s string) int8 {
	switch s {
	case smUnrevoked:
		return streamsMemberUnrevoked
	case smUnreleased:
		return streamsMemberUnreleased
	}
	return streamsMemberStable
}

// streamsRecordsLocked returns the records describing sg now, by key.
//
// Lock should be held.
func (c *Coordinator) streamsRecordsLocked(id string, sg *streamsGroup) map[string][]byte {
	out := map[string][]byte{}
	put := func(t int16, member string, v []byte) {
		out[string(recordKey{t, id, member}.encode())] = v
	}
	md := streamsGroupMetadataValue{Epoch: sg.epoch, MetadataHash: subscriptionHash(sg.metadata),
		AssignmentConfigs: [][2]string{{streamsNumStandbyConfig, strconv.Itoa(sg.standbys)}}, ValidatedTopologyEpoch: -1}
	if sg.topology != nil && sg.metadata != "" {
		md.ValidatedTopologyEpoch = sg.topology.epoch
	}
	put(keyStreamsGroupMetadata, "", md.encode())
	put(keyStreamsGroupTargetMetadata, "", encodeEpochValue(sg.assignmentEpoch))
	if sg.topology != nil {
		put(keyStreamsGroupTopology, "", sg.topology.encode())
	}
	for mid, m := range sg.members {
		mv := streamsMemberValue{InstanceID: nullable(m.instanceID), RackID: nullable(m.rackID),
			ClientID: m.clientID, ClientHost: m.clientHost, RebalanceTimeoutMs: int32(m.rebalanceTimeout.Milliseconds()),
			TopologyEpoch: m.topologyEpoch, ProcessID: m.processID, UserEndpoint: m.endpoint, ClientTags: m.clientTags}
		put(keyStreamsGroupMember, mid, mv.encode())
		if t, ok := sg.target[mid]; ok {
			put(keyStreamsGroupTargetMember, mid, encodeStreamsTarget(t))
		}
		cv := streamsCurrentValue{MemberEpoch: m.epoch, PreviousMemberEpoch: m.prevEpoch, State: streamsMemberStateCode(m.state),
			Assigned: m.assigned, Revoking: m.revoking, Epochs: m.epochs}
		put(keyStreamsGroupCurrentAssignment, mid, cv.encode())
	}
	return out
}

// persistStreamsLocked writes g's streams-group records (tombstones if g
// is gone).
//
// Lock should be held.
func (c *Coordinator) persistStreamsLocked(g *group) func() *kerr.Error {
	if g == nil || g.st == nil {
		return nil
	}
	var want map[string][]byte
	if c.groups[g.id] == g {
		want = c.streamsRecordsLocked(g.id, g.st)
	}
	return c.persistRecordsLocked(g.id, &g.st.logged, want)
}

// restoreStreamsGroupLocked rebuilds a streams group from its records.
//
// Lock should be held.
func (c *Coordinator) restoreStreamsGroupLocked(id string, recs map[recordKey][]byte, logged map[string][]byte, topics map[string]ConsumerTopic) {
	sg := newStreamsGroup()
	sg.logged = logged
	md, err := decodeStreamsGroupMetadata(recs[recordKey{Type: keyStreamsGroupMetadata, Group: id}])
	if err != nil {
		c.log.Warn("skipping a malformed streams group metadata record", "group", id)
	}
	sg.epoch = md.Epoch
	for _, kv := range md.AssignmentConfigs {
		if kv[0] == streamsNumStandbyConfig {
			if n, err := strconv.Atoi(kv[1]); err == nil && n >= 0 {
				sg.standbys = n
			}
		}
	}
	if v, ok := recs[recordKey{Type: keyStreamsGroupTargetMetadata, Group: id}]; ok {
		sg.assignmentEpoch, _ = decodeEpochValue(v)
	}
	if v, ok := recs[recordKey{Type: keyStreamsGroupTopology, Group: id}]; ok {
		if t, err := decodeStreamsTopology(v); err == nil {
			sg.topology = t
		} else {
			c.log.Warn("skipping a malformed streams group topology record", "group", id)
		}
	}
	for k, v := range recs {
		if k.Type != keyStreamsGroupMember {
			continue
		}
		mv, err := decodeStreamsMember(v)
		if err != nil {
			c.log.Warn("skipping a malformed streams group member record", "group", id, "member", k.Member)
			continue
		}
		m := &streamsMember{memberCore: memberCore{id: k.Member, instanceID: deref(mv.InstanceID), rackID: deref(mv.RackID),
			clientID: mv.ClientID, clientHost: mv.ClientHost, rebalanceTimeout: millis(mv.RebalanceTimeoutMs), state: smStable},
			processID: mv.ProcessID, topologyEpoch: mv.TopologyEpoch, endpoint: mv.UserEndpoint, clientTags: mv.ClientTags,
			assigned: newStreamsAssignment(), revoking: newStreamsAssignment()}
		if cv, ok := recs[recordKey{keyStreamsGroupCurrentAssignment, id, k.Member}]; ok {
			if a, err := decodeStreamsCurrent(cv); err == nil {
				m.epoch, m.prevEpoch = a.MemberEpoch, a.PreviousMemberEpoch
				m.assigned, m.revoking, m.epochs = a.Assigned, a.Revoking, a.Epochs
				switch a.State {
				case streamsMemberUnrevoked:
					m.state = smUnrevoked
				case streamsMemberUnreleased:
					m.state = smUnreleased
				}
			}
		}
		if tv, ok := recs[recordKey{keyStreamsGroupTargetMember, id, k.Member}]; ok {
			if t, err := decodeStreamsTarget(tv); err == nil {
				sg.target[m.id] = t
			}
		}
		sg.add(m)
	}
	if ct := sg.configured(topics); ct != nil && subscriptionHash(ct.metadata) == md.MetadataHash {
		sg.metadata = ct.metadata
	}
	g := c.groups[id]
	if g == nil {
		g = newGroup(id, c.cfg.Now())
		c.groups[id] = g
	}
	g.st, g.cg = sg, nil
	g.protocolType = streamsGroupType
	g.members, g.order, g.leader, g.protocol = map[string]*member{}, nil, "", ""
	if len(sg.members) > 0 {
		g.state, g.prevState = stateStable, stateStable
	} else {
		g.state, g.prevState = stateEmpty, stateEmpty
	}
}

// scheduleStreamsTimersLocked restarts the session timers of the streams
// group members of g, and the revocation timers of those revoking.
//
// Lock should be held.
func (c *Coordinator) scheduleStreamsTimersLocked(g *group) {
	for _, mid := range sortedKeys(g.st.members) {
		m := g.st.members[mid]
		c.scheduleStreamsSessionLocked(g, m)
		if m.state == smUnrevoked {
			c.scheduleStreamsRevokeLocked(g, m)
		}
	}
}

// isStreamsKey reports whether t is a key type of a streams group record.
func isStreamsKey(t int16) bool { return t >= keyStreamsGroupMetadata && t <= keyStreamsGroupTopology }

// streamsRecordRank orders the records of one change: member metadata,
// topology, group metadata, targets, target metadata, current
// assignments.
func streamsRecordRank(t int16) int {
	switch t {
	case keyStreamsGroupMember:
		return 0
	case keyStreamsGroupTopology:
		return 1
	case keyStreamsGroupMetadata:
		return 2
	case keyStreamsGroupTargetMember:
		return 3
	case keyStreamsGroupTargetMetadata:
		return 4
	}
	return 5
}
