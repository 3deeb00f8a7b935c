package coordinator

// Offset commits to consumer groups (KIP-848) and the assignment epochs
// they are checked against (KIP-1251, as Kafka 4.3+ checks them).
//
// Every partition a member holds, and every partition it must still
// revoke, carries an assignment epoch: the target assignment epoch at
// which the member was given it. Reconciliation (reconcileLocked) keeps
// the epoch of a partition the member keeps and of a partition moved to
// pending revocation, and gives a newly assigned partition the target
// assignment epoch; a static member leaving with epoch -2 has its epochs
// reset to 0, and a member rejoining with epoch 0 starts without any. The
// epochs are kept in ConsumerGroupCurrentMemberAssignment records
// (AssignmentEpochs, tag 0 of each TopicPartitions, aligned with its
// Partitions); a record without them, as Kafka before 4.3 and Gregor
// before it wrote them, gives every partition max(member epoch, 0), as
// Kafka reads it.
//
// OffsetCommit and TxnOffsetCommit (Kafka's ConsumerGroup.validateOffsetCommit
// and createAssignmentEpochValidator), in order:
//
//  1. A negative epoch commits while the group has no members, whatever
//     the member id (admin tools, consumers without group management).
//  2. A TxnOffsetCommit with epoch -1, member id "" and no group instance
//     id commits: its producer gave no group metadata.
//  3. Any other member id must be a member: UNKNOWN_MEMBER_ID.
//  4. A member using the consumer protocol must send OffsetCommit v9+:
//     UNSUPPORTED_VERSION.
//  5. The member's epoch commits every partition, owned or not.
//  6. A newer epoch is refused.
//  7. An older epoch, such as the one of the commit a consumer sends on
//     close after a heartbeat moved it to the next epoch, commits only if
//     every partition of the request is held or being revoked by the
//     member with an assignment epoch not after the commit's. Otherwise the
//     whole request is refused and nothing is written.
//
// A refusal in 6 or 7 is STALE_MEMBER_EPOCH, ILLEGAL_GENERATION for
// members using the classic protocol and for TxnOffsetCommit before v6
// (which has no STALE_MEMBER_EPOCH). FENCED_MEMBER_EPOCH is never
// answered. OffsetFetch (v9+) keeps the exact check of the member epoch
// (validateConsumerOffsetFetch).

import (
	"iter"

	"github.com/twmb/franz-go/pkg/kerr"
)

// partEpochs is an assignment epoch per partition, by topic name.
type partEpochs map[string]map[int32]int32

// setAssignmentEpoch records e as the assignment epoch of t/p.
func (m *consumerMember) setAssignmentEpoch(t string, p, e int32) { m.setEpoch(t, p, e) }

// assignmentEpoch returns the assignment epoch of t/p, and false if m
// neither holds t/p nor must revoke it. A partition without a recorded
// epoch (there should be none) has max(member epoch, 0), as a record
// without epochs gives it.
func (m *consumerMember) assignmentEpoch(t string, p int32) (int32, bool) {
	if !m.assigned.has(t, p) && !m.revoking.has(t, p) {
		return 0, false
	}
	return m.epochAt(t, p), true
}

// pruneAssignmentEpochs drops the epochs of partitions m neither holds nor
// revokes.
func (m *consumerMember) pruneAssignmentEpochs() {
	m.pruneEpochs(func(t string, p int32) bool { return m.assigned.has(t, p) || m.revoking.has(t, p) })
}

// resetAssignmentEpochs gives every partition m holds or revokes epoch e.
func (m *consumerMember) resetAssignmentEpochs(e int32) {
	m.epochs = nil
	for _, a := range []partitionSet{m.assigned, m.revoking} {
		for t, ps := range a {
			for _, p := range ps {
				m.setAssignmentEpoch(t, p, e)
			}
		}
	}
}

// epochOf is assignmentEpoch without its second result, for the records.
func (m *consumerMember) epochOf(t string, p int32) int32 {
	e, _ := m.assignmentEpoch(t, p)
	return e
}

// restoreAssignmentEpochs records the epochs of a current assignment
// record's partitions in m; the partitions of a topic without epochs, or
// whose epochs do not line up with its partitions, get def.
func (c *Coordinator) restoreAssignmentEpochs(group string, m *consumerMember, in []topicPartitions, names map[[16]byte]string, def int32) {
	for _, tp := range in {
		name, ok := names[tp.TopicID]
		if !ok {
			continue
		}
		es := tp.AssignmentEpochs
		if es != nil && len(es) != len(tp.Partitions) {
			c.log.Warn("consumer group member assignment epochs do not match its partitions; using the member epoch",
				"group", group, "member", m.id, "topic", name, "epochs", len(es), "partitions", len(tp.Partitions))
			es = nil
		}
		for i, p := range tp.Partitions {
			e := def
			if es != nil {
				e = es[i]
			}
			m.setAssignmentEpoch(name, p, e)
		}
	}
}

// commitKind says which request a consumer-group commit check is for.
type commitKind struct {
	txn     bool  // TxnOffsetCommit, else OffsetCommit
	version int16 // the request's version
	// instance is whether a TxnOffsetCommit carries a group instance id.
	instance bool
}

// validateConsumerOffsetCommit is the check of an OffsetCommit or
// TxnOffsetCommit to a consumer group (see the top of this file); parts
// are the partitions the request would write, walked only for a commit at
// an older epoch (the common commit, at the member's epoch, lists none).
func validateConsumerOffsetCommit(g *group, memberID string, epoch int32, kind commitKind, parts iter.Seq[offsetKey]) *kerr.Error {
	cg := g.cg
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	if kind.txn && epoch == -1 && memberID == "" && !kind.instance {
		return nil
	}
	m := cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if !kind.txn && m.classic == nil && kind.version < 9 {
		return kerr.UnsupportedVersion
	}
	if epoch == m.epoch {
		return nil
	}
	stale := kerr.StaleMemberEpoch
	if m.classic != nil || (kind.txn && kind.version < 6) {
		stale = kerr.IllegalGeneration
	}
	if epoch > m.epoch {
		return stale
	}
	for k := range parts {
		if e, ok := m.assignmentEpoch(k.topic, k.partition); !ok || epoch < e {
			return stale
		}
	}
	return nil
}

// validateConsumerOffsetFetch is OffsetFetch's (v9+) check for consumer
// groups: a fetch without member and epoch is accepted while the group has
// no members; otherwise the member must exist (UNKNOWN_MEMBER_ID) at
// exactly this epoch (STALE_MEMBER_EPOCH, ILLEGAL_GENERATION for members
// using the classic protocol).
func validateConsumerOffsetFetch(g *group, memberID string, epoch int32) *kerr.Error {
	if epoch < 0 && memberID == "" {
		if len(g.cg.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := g.cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if epoch != m.epoch {
		if m.classic != nil {
			return kerr.IllegalGeneration
		}
		return kerr.StaleMemberEpoch
	}
	return nil
}
