package coordinator

// Consumer groups (KIP-848) and share groups (KIP-932) in
// __consumer_offsets, as Kafka 4.x keeps them (record formats in
// grouprecords.go):
//
//	ConsumerGroupMetadata              group epoch, MetadataHash
//	ConsumerGroupMemberMetadata        per member: subscription, instance and rack ids, client
//	ConsumerGroupTargetAssignmentMetadata  assignment epoch
//	ConsumerGroupTargetAssignmentMember    per member: target assignment
//	ConsumerGroupCurrentMemberAssignment   per member: epoch, previous epoch, state, assigned and revoking partitions with their assignment epochs
//	ConsumerGroupRegularExpression     per regex: the topics it resolved to
//	ShareGroupMetadata, ShareGroupMemberMetadata, ShareGroupTargetAssignmentMetadata,
//	ShareGroupTargetAssignmentMember, ShareGroupCurrentMemberAssignment: likewise
//	StreamsGroupMetadata, StreamsGroupTopology, StreamsGroupMemberMetadata,
//	StreamsGroupTargetAssignmentMetadata/Member, StreamsGroupCurrentMemberAssignment:
//	streams groups (KIP-1071; formats in streams_records.go)
//
// After every change of a group (a heartbeat, a member expiring or being
// fenced, a deletion) the records that describe it now are compared with
// those last written (consumerGroup.logged, shareGroup.logged): changed
// ones are appended, vanished ones get tombstones, in Kafka's order
// (tombstones of a member's current assignment, target and metadata first;
// then member metadata, regexes, group metadata, targets, target metadata,
// current assignments). Heartbeats answer once their records are committed,
// as OffsetCommit does; expirations do not wait. groups.db keeps the
// records by group in bucket "modern_groups" (the materialised view, with
// the log offset of each), so a load replays only the log's tail and then
// rebuilds the groups from the view. Members come back with fresh session
// timers (and revocation timers for members revoking), as in Kafka.
//
// MetadataHash is Gregor's: an FNV-1a hash of the subscribed topics and
// partition counts the group epoch was computed for; a group loaded with
// another hash bumps its epoch at the next heartbeat. Join order (used to
// break ties between requested assignors and for describe order) is not
// recorded and comes back sorted by member id.

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	bolt "go.etcd.io/bbolt"
)

// bucketModern holds, per group id, a nested bucket: record key → log
// offset (int64, -1 without a log) followed by the record value.
var bucketModern = []byte("modern_groups")

func subscriptionHash(sub string) int64 {
	if sub == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(sub))
	return int64(h.Sum64())
}

// recordRank orders the records of one change as Kafka writes them.
func recordRank(t int16) int {
	if isStreamsKey(t) {
		return streamsRecordRank(t)
	}
	switch t {
	case keyConsumerGroupMember, keyShareGroupMember:
		return 0
	case keyConsumerGroupRegex:
		return 1
	case keyConsumerGroupMetadata, keyShareGroupMetadata:
		return 2
	case keyConsumerGroupTargetMember, keyShareGroupTargetMember:
		return 3
	case keyConsumerGroupTargetMetadata, keyShareGroupTargetMetadata:
		return 4
	}
	return 5
}

// consumerRecordsLocked returns the records describing cg now, by key.
//
// Lock should be held.
func (c *Coordinator) consumerRecordsLocked(id string, cg *consumerGroup) map[string][]byte {
	topics := c.topicsByName()
	out := map[string][]byte{}
	put := func(t int16, member string, v []byte) {
		out[string(recordKey{t, id, member}.encode())] = v
	}
	put(keyConsumerGroupMetadata, "", groupMetadataValue{cg.epoch, subscriptionHash(cg.subscription)}.encodeConsumer())
	put(keyConsumerGroupTargetMetadata, "", encodeEpochValue(cg.assignmentEpoch))
	regexes := map[string]*regexp.Regexp{}
	for mid, m := range cg.members {
		mv := consumerMemberValue{
			InstanceID: nullable(m.instanceID), RackID: nullable(m.rackID),
			ClientID: m.clientID, ClientHost: m.clientHost,
			SubscribedTopicNames: slices.Clone(m.topics), SubscribedTopicRegex: nullable(m.regex),
			RebalanceTimeoutMs: int32(m.rebalanceTimeout.Milliseconds()), ServerAssignor: nullable(m.serverAssignor),
		}
		if mv.SubscribedTopicNames == nil {
			mv.SubscribedTopicNames = []string{}
		}
		if m.classic != nil {
			mv.Classic = &classicMemberValue{SessionTimeoutMs: int32(m.classic.sessionTimeout.Milliseconds()), SupportedProtocols: m.classic.protocols}
		}
		put(keyConsumerGroupMember, mid, mv.encode())
		if t, ok := cg.target[mid]; ok {
			put(keyConsumerGroupTargetMember, mid, encodeTargetMember(toTopicPartitions(t, topics, nil)))
		}
		state := memberStateStable
		switch m.state {
		case msUnrevoked:
			state = memberStateUnrevoked
		case msUnreleased:
			state = memberStateUnreleased
		}
		cv := currentAssignmentValue{MemberEpoch: m.epoch, PreviousMemberEpoch: m.prevEpoch, State: state,
			AssignedPartitions:          toTopicPartitions(m.assigned, topics, m.epochOf),
			PartitionsPendingRevocation: toTopicPartitions(m.revoking, topics, m.epochOf)}
		put(keyConsumerGroupCurrentAssignment, mid, cv.encode(false))
		if m.regex != "" && m.re != nil {
			regexes[m.regex] = m.re
		}
	}
	for re, compiled := range regexes {
		var matched []string
		for _, name := range sortedKeys(topics) {
			if compiled.MatchString(name) {
				matched = append(matched, name)
			}
		}
		if matched == nil {
			matched = []string{}
		}
		// The resolution's version is its topics' hash: the record is
		// rewritten when the resolution changes, not at every heartbeat.
		rv := regexValue{Topics: matched, Version: subscriptionHash(re + "\x00" + joinNames(matched))}
		key := string(recordKey{keyConsumerGroupRegex, id, re}.encode())
		if old, ok := cg.logged[key]; ok {
			if ov, err := decodeRegex(old); err == nil && ov.Version == rv.Version {
				out[key] = old
				continue
			}
		}
		rv.Timestamp = c.cfg.Now().UnixMilli()
		out[key] = rv.encode()
	}
	return out
}

func joinNames(ns []string) string {
	n := 0
	for _, s := range ns {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for _, s := range ns {
		b = append(append(b, s...), 0)
	}
	return string(b)
}

// shareRecordsLocked returns the records describing sg now, by key.
//
// Lock should be held.
func (c *Coordinator) shareRecordsLocked(sg *shareGroup) map[string][]byte {
	topics := c.topicsByName()
	out := map[string][]byte{}
	put := func(t int16, member string, v []byte) {
		out[string(recordKey{t, sg.id, member}.encode())] = v
	}
	put(keyShareGroupMetadata, "", groupMetadataValue{sg.epoch, subscriptionHash(sg.subscription)}.encodeShare())
	put(keyShareGroupTargetMetadata, "", encodeEpochValue(sg.assignmentEpoch))
	for mid, m := range sg.members {
		mv := shareMemberValue{RackID: nullable(m.rackID), ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopicNames: slices.Clone(m.topics)}
		if mv.SubscribedTopicNames == nil {
			mv.SubscribedTopicNames = []string{}
		}
		put(keyShareGroupMember, mid, mv.encode())
		if t, ok := sg.target[mid]; ok {
			put(keyShareGroupTargetMember, mid, encodeTargetMember(toTopicPartitions(t, topics, nil)))
		}
		cv := currentAssignmentValue{MemberEpoch: m.epoch, PreviousMemberEpoch: m.prevEpoch, State: memberStateStable,
			AssignedPartitions: toTopicPartitions(m.assigned, topics, nil)}
		put(keyShareGroupCurrentAssignment, mid, cv.encode(true))
	}
	return out
}

// persistRecordsLocked brings the log and groups.db from *logged to want
// (nil: the group is gone) and returns what waits for the records to be
// committed (nil if nothing was appended or without a log).
//
// Lock should be held.
func (c *Coordinator) persistRecordsLocked(id string, logged *map[string][]byte, want map[string][]byte) func() *kerr.Error {
	type change struct {
		key   string
		t     int16
		value []byte
	}
	var dels, puts []change
	for k := range *logged {
		if _, ok := want[k]; !ok {
			dels = append(dels, change{key: k, t: int16(binary.BigEndian.Uint16([]byte(k)))})
		}
	}
	for k, v := range want {
		if old, ok := (*logged)[k]; !ok || !slices.Equal(old, v) {
			puts = append(puts, change{key: k, t: int16(binary.BigEndian.Uint16([]byte(k))), value: v})
		}
	}
	if len(dels)+len(puts) == 0 {
		return nil
	}
	slices.SortFunc(dels, func(a, b change) int {
		if ra, rb := recordRank(a.t), recordRank(b.t); ra != rb {
			return rb - ra
		}
		return cmp.Compare(a.key, b.key)
	})
	slices.SortFunc(puts, func(a, b change) int {
		if ra, rb := recordRank(a.t), recordRank(b.t); ra != rb {
			return ra - rb
		}
		return cmp.Compare(a.key, b.key)
	})
	all := append(dels, puts...)
	recs := make([]LogRecord, len(all))
	for i, ch := range all {
		recs[i] = LogRecord{Key: []byte(ch.key), Value: ch.value}
	}
	last, committed := c.appendAsyncLocked(id, recs)
	base := int64(-1)
	if last >= 0 {
		base = last - int64(len(recs)) + 1
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketModern)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(id))
		if err != nil {
			return err
		}
		for i, ch := range all {
			off := int64(-1)
			if base >= 0 {
				off = base + int64(i)
			}
			if err := putModern(b, []byte(ch.key), off, ch.value); err != nil {
				return err
			}
		}
		if want == nil {
			return root.DeleteBucket([]byte(id))
		}
		return nil
	})
	if err != nil {
		c.log.Warn("storing group records in groups.db failed", "group", id, "err", err)
	}
	if want == nil {
		*logged = map[string][]byte{}
	} else {
		*logged = want
	}
	return committed
}

func putModern(b *bolt.Bucket, key []byte, off int64, value []byte) error {
	if value == nil {
		return b.Delete(key)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(value)), uint64(off))
	return b.Put(key, append(v, value...))
}

// applyModernRecord applies a replayed KIP-848 or share group record to
// groups.db unless the view holds a later one for its key.
func applyModernRecord(tx *bolt.Tx, r replayed) error {
	k, err := decodeRecordKey(r.key)
	if err != nil {
		return nil
	}
	root, err := tx.CreateBucketIfNotExists(bucketModern)
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists([]byte(k.Group))
	if err != nil {
		return err
	}
	if old := b.Get(r.key); len(old) >= 8 && int64(binary.BigEndian.Uint64(old)) >= r.offset {
		return nil
	}
	return putModern(b, r.key, r.offset, r.value)
}

// persistConsumerLocked writes g's consumer-group records (tombstones if
// g is no longer a consumer group or is gone).
//
// Lock should be held.
func (c *Coordinator) persistConsumerLocked(g *group) func() *kerr.Error {
	if g == nil || g.cg == nil {
		return nil
	}
	var want map[string][]byte
	if c.groups[g.id] == g {
		want = c.consumerRecordsLocked(g.id, g.cg)
	}
	return c.persistRecordsLocked(g.id, &g.cg.logged, want)
}

// persistShareLocked writes sg's records (tombstones if it was deleted).
//
// Lock should be held.
func (c *Coordinator) persistShareLocked(sg *shareGroup) func() *kerr.Error {
	if sg == nil {
		return nil
	}
	var want map[string][]byte
	if c.shares[sg.id] == sg {
		want = c.shareRecordsLocked(sg)
	}
	return c.persistRecordsLocked(sg.id, &sg.logged, want)
}

// restoreModernLocked rebuilds the consumer and share groups of groups.db
// for which keep is true (all if nil).
//
// Lock should be held (or the coordinator not yet shared).
func (c *Coordinator) restoreModernLocked(tx *bolt.Tx, keep func(id string) bool) error {
	root := tx.Bucket(bucketModern)
	if root == nil {
		return nil
	}
	topics := c.topicsByName()
	names := map[[16]byte]string{}
	for _, t := range topics {
		names[t.ID] = t.Name
	}
	return root.ForEach(func(gk, v []byte) error {
		id := string(gk)
		b := root.Bucket(gk)
		if v != nil || b == nil || (keep != nil && !keep(id)) {
			return nil
		}
		recs := map[recordKey][]byte{}
		logged := map[string][]byte{}
		b.ForEach(func(k, v []byte) error {
			rk, err := decodeRecordKey(k)
			if err != nil || len(v) < 8 || rk.Group != id {
				return nil
			}
			recs[rk] = slices.Clone(v[8:])
			logged[string(k)] = recs[rk]
			return nil
		})
		if _, ok := recs[recordKey{Type: keyConsumerGroupMetadata, Group: id}]; ok {
			c.restoreConsumerGroupLocked(id, recs, logged, topics, names)
		} else if _, ok := recs[recordKey{Type: keyShareGroupMetadata, Group: id}]; ok {
			c.restoreShareGroupLocked(id, recs, logged, topics, names)
		} else if _, ok := recs[recordKey{Type: keyStreamsGroupMetadata, Group: id}]; ok {
			c.restoreStreamsGroupLocked(id, recs, logged, topics)
		}
		return nil
	})
}

func (c *Coordinator) restoreConsumerGroupLocked(id string, recs map[recordKey][]byte, logged map[string][]byte, topics map[string]ConsumerTopic, names map[[16]byte]string) {
	cg := newConsumerGroup()
	cg.logged = logged
	md, _ := decodeConsumerGroupMetadata(recs[recordKey{Type: keyConsumerGroupMetadata, Group: id}])
	cg.epoch = md.Epoch
	if v, ok := recs[recordKey{Type: keyConsumerGroupTargetMetadata, Group: id}]; ok {
		cg.assignmentEpoch, _ = decodeEpochValue(v)
	}
	for k, v := range recs {
		if k.Type != keyConsumerGroupMember {
			continue
		}
		mv, err := decodeConsumerMember(v)
		if err != nil {
			c.log.Warn("skipping a malformed consumer group member record", "group", id, "member", k.Member)
			continue
		}
		m := &consumerMember{memberCore: memberCore{id: k.Member, instanceID: deref(mv.InstanceID), rackID: deref(mv.RackID),
			clientID: mv.ClientID, clientHost: mv.ClientHost, rebalanceTimeout: millis(mv.RebalanceTimeoutMs), state: msStable},
			topics: mv.SubscribedTopicNames, serverAssignor: deref(mv.ServerAssignor),
			assigned: partitionSet{}, revoking: partitionSet{}}
		if len(m.topics) == 0 {
			m.topics = nil
		}
		if mv.Classic != nil {
			m.classic = &classicMember{sessionTimeout: millis(mv.Classic.SessionTimeoutMs), protocols: mv.Classic.SupportedProtocols}
		}
		if mv.SubscribedTopicRegex != nil && *mv.SubscribedTopicRegex != "" {
			if re, err := regexp.Compile("^(?:" + *mv.SubscribedTopicRegex + ")$"); err == nil {
				m.regex, m.re = *mv.SubscribedTopicRegex, re
			}
		}
		if cv, ok := recs[recordKey{keyConsumerGroupCurrentAssignment, id, k.Member}]; ok {
			if a, err := decodeCurrentAssignment(cv, false); err == nil {
				m.epoch, m.prevEpoch = a.MemberEpoch, a.PreviousMemberEpoch
				m.assigned = fromTopicPartitions(a.AssignedPartitions, names)
				m.revoking = fromTopicPartitions(a.PartitionsPendingRevocation, names)
				// Records without assignment epochs give max(epoch, 0).
				def := max(a.MemberEpoch, 0)
				c.restoreAssignmentEpochs(id, m, a.AssignedPartitions, names, def)
				c.restoreAssignmentEpochs(id, m, a.PartitionsPendingRevocation, names, def)
				switch a.State {
				case memberStateUnrevoked:
					m.state = msUnrevoked
				case memberStateUnreleased:
					m.state = msUnreleased
				}
			}
		}
		if tv, ok := recs[recordKey{keyConsumerGroupTargetMember, id, k.Member}]; ok {
			if t, err := decodeTargetMember(tv); err == nil {
				cg.target[m.id] = fromTopicPartitions(t, names)
			}
		}
		cg.add(m)
		cg.order = append(cg.order, m.id)
	}
	slices.Sort(cg.order)
	if sub := cg.subscriptionOf(topics); subscriptionHash(sub) == md.MetadataHash {
		cg.subscription = sub
	}
	g := c.groups[id]
	if g == nil {
		g = newGroup(id, c.cfg.Now())
		c.groups[id] = g
	}
	g.cg = cg
	g.protocolType = consumerProtocolType
	g.members, g.order, g.leader, g.protocol = map[string]*member{}, nil, "", ""
	if len(cg.members) > 0 {
		g.state, g.prevState = stateStable, stateStable
	} else {
		g.state, g.prevState = stateEmpty, stateEmpty
	}
}

func (c *Coordinator) restoreShareGroupLocked(id string, recs map[recordKey][]byte, logged map[string][]byte, topics map[string]ConsumerTopic, names map[[16]byte]string) {
	sg := &shareGroup{id: id, members: map[string]*shareMember{}, target: map[string]partitionSet{}, logged: logged}
	md, _ := decodeShareGroupMetadata(recs[recordKey{Type: keyShareGroupMetadata, Group: id}])
	sg.epoch = md.Epoch
	if v, ok := recs[recordKey{Type: keyShareGroupTargetMetadata, Group: id}]; ok {
		sg.assignmentEpoch, _ = decodeEpochValue(v)
	}
	for k, v := range recs {
		if k.Type != keyShareGroupMember {
			continue
		}
		mv, err := decodeShareMember(v)
		if err != nil {
			continue
		}
		m := &shareMember{id: k.Member, rackID: deref(mv.RackID), clientID: mv.ClientID, clientHost: mv.ClientHost,
			topics: mv.SubscribedTopicNames, assigned: partitionSet{}}
		if cv, ok := recs[recordKey{keyShareGroupCurrentAssignment, id, k.Member}]; ok {
			if a, err := decodeCurrentAssignment(cv, true); err == nil {
				m.epoch, m.prevEpoch = a.MemberEpoch, a.PreviousMemberEpoch
				m.assigned = fromTopicPartitions(a.AssignedPartitions, names)
			}
		}
		if tv, ok := recs[recordKey{keyShareGroupTargetMember, id, k.Member}]; ok {
			if t, err := decodeTargetMember(tv); err == nil {
				sg.target[m.id] = fromTopicPartitions(t, names)
			}
		}
		sg.members[m.id] = m
	}
	if sub := sg.subscriptionOf(topics); subscriptionHash(sub) == md.MetadataHash {
		sg.subscription = sub
	}
	if g := c.groups[id]; g != nil && g.cg == nil && len(g.members) == 0 {
		// Offsets without a group of their own (a share group has none
		// in __consumer_offsets): not a classic group.
		delete(c.groups, id)
	}
	c.shares[id] = sg
}

// scheduleModernTimersLocked restarts the session timers of the consumer
// and share group members restored for which keep is true (all if nil),
// and the revocation timers of consumer members revoking.
//
// Lock should be held.
func (c *Coordinator) scheduleModernTimersLocked(keep func(id string) bool) {
	for id, g := range c.groups {
		if g.st != nil && (keep == nil || keep(id)) {
			c.scheduleStreamsTimersLocked(g)
		}
		if g.cg == nil || (keep != nil && !keep(id)) {
			continue
		}
		for _, mid := range g.cg.order {
			m := g.cg.members[mid]
			c.scheduleConsumerSessionLocked(g, m)
			if m.state == msUnrevoked && m.classic == nil {
				c.scheduleRevokeLocked(g, m)
			}
		}
	}
	for id, sg := range c.shares {
		if keep != nil && !keep(id) {
			continue
		}
		for _, m := range sg.members {
			c.scheduleShareSessionLocked(sg, m)
		}
	}
}

// modernTombstonesLocked returns tombstones for every record groups.db
// holds of group id, and removes them from it.
//
// Lock should be held.
func (c *Coordinator) modernTombstones(tx *bolt.Tx, id string) ([]LogRecord, error) {
	root := tx.Bucket(bucketModern)
	if root == nil {
		return nil, nil
	}
	b := root.Bucket([]byte(id))
	if b == nil {
		return nil, nil
	}
	type keyed struct {
		t   int16
		key []byte
	}
	var ks []keyed
	b.ForEach(func(k, _ []byte) error {
		if len(k) >= 2 {
			ks = append(ks, keyed{int16(binary.BigEndian.Uint16(k)), slices.Clone(k)})
		}
		return nil
	})
	slices.SortStableFunc(ks, func(a, b keyed) int { return recordRank(b.t) - recordRank(a.t) })
	out := make([]LogRecord, len(ks))
	for i, k := range ks {
		out[i] = LogRecord{Key: k.key}
	}
	return out, root.DeleteBucket([]byte(id))
}
