package cluster

// DescribeQuorum: the etcd raft group described as Kafka describes its
// KRaft quorum (DescribeQuorum, kafka-metadata-quorum describe).
//
// What each number is:
//
//   - the leader is the node whose member etcd's raft elected, its epoch
//     the raft term, the high watermark the raft commit index;
//   - a member's log end offset is its raft index as etcd's Maintenance
//     Status reports it (its committed index). This node knows its own
//     member's; with an external etcd (etcd.endpoints) every member's is
//     asked for at its client URL. Embedded members have no client URL
//     (the broker reaches its own in-process), so the others' come from
//     the raft leader's progress tracker: its Match for each follower, the
//     index up to which the follower's log is known to match the leader's,
//     which is the leader's view of the follower's log end, as Kafka's
//     leader reports its followers' fetch offsets. Only the member that is
//     the raft leader has that view (the broker forwards DescribeQuorum to
//     it); elsewhere the other members' offsets are -1.
//   - etcd keeps no fetch timestamps. The leader's raft marks a follower
//     RecentActive when it heard from it within the last election timeout
//     (500 ms): such a follower's last fetch is reported as now, and its
//     last caught-up time as now too when its Match reaches the commit
//     index. The leader's own are now, as in Kafka. Unknown: -1.
//
// The raft progress is read through etcd's expvar "raft.status", which
// holds the status of the last member started in the process: one per
// process in production; in tests that run several members in one process
// it is used only when its id is this node's member's.

import (
	"context"
	"expvar"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3"
)

// DescribeQuorum describes the raft group of the cluster's etcd (see
// above). Its error is etcd's when the member list cannot be read.
func (n *Node) DescribeQuorum(ctx context.Context) (*QuorumState, error) {
	ml, err := n.cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd member list: %w", err)
	}
	now := time.Now()
	q := &QuorumState{LeaderID: -1}
	type member struct {
		st      ReplicaState
		learner bool
	}
	members := map[uint64]*member{}
	for _, m := range ml.Members {
		rs := ReplicaState{NodeID: memberNodeID(m.Name, m.ID), LogEndOffset: -1}
		if len(m.PeerURLs) > 0 {
			if u, err := url.Parse(m.PeerURLs[0]); err == nil {
				if h, p, err := net.SplitHostPort(u.Host); err == nil {
					port, _ := strconv.Atoi(p)
					rs.Host, rs.Port = h, int32(port)
				}
			}
		}
		members[m.ID] = &member{st: rs, learner: m.IsLearner}
	}
	var leader uint64
	if n.etcd != nil {
		s := n.etcd.Server
		self := uint64(s.MemberID())
		leader = s.Lead()
		q.LeaderEpoch = int64(s.Term())
		q.HighWatermark = int64(s.CommittedIndex())
		if m := members[self]; m != nil {
			m.st.LogEndOffset = q.HighWatermark
		}
		if st, ok := raftStatusOf(self); ok && st.RaftState == raft.StateLeader {
			for id, pr := range st.Progress {
				m := members[id]
				if m == nil || id == self {
					continue
				}
				m.st.LogEndOffset = int64(pr.Match)
				if pr.RecentActive {
					m.st.LastFetch = now
					if int64(pr.Match) >= q.HighWatermark {
						m.st.LastCaughtUp = now
					}
				}
			}
		}
	} else {
		for _, mm := range ml.Members {
			id, m := mm.ID, members[mm.ID]
			if len(mm.ClientURLs) == 0 {
				continue
			}
			st, err := n.cli.Status(ctx, mm.ClientURLs[0])
			if err != nil {
				continue
			}
			m.st.LogEndOffset = int64(st.RaftIndex)
			if int64(st.RaftTerm) >= q.LeaderEpoch {
				q.LeaderEpoch, leader = int64(st.RaftTerm), st.Leader
			}
			if st.Leader == id {
				q.HighWatermark = int64(st.RaftIndex)
			}
		}
	}
	if m := members[leader]; m != nil {
		q.LeaderID = m.st.NodeID
		m.st.LastFetch, m.st.LastCaughtUp = now, now
	}
	voterIDs := map[int32]bool{}
	for _, m := range members {
		if m.learner {
			continue
		}
		q.Voters = append(q.Voters, m.st)
		voterIDs[m.st.NodeID] = true
	}
	slices.SortFunc(q.Voters, func(a, b ReplicaState) int { return int(a.NodeID) - int(b.NodeID) })
	md := n.Metadata()
	for _, id := range md.BrokerIDs() {
		if !voterIDs[id] {
			q.Observers = append(q.Observers, ReplicaState{NodeID: id, LogEndOffset: -1})
		}
	}
	return q, nil
}

// memberNodeID is the node id of an etcd member: N for the embedded
// member "gregor-N", else (an external etcd's own members) the member id's
// low 31 bits.
func memberNodeID(name string, id uint64) int32 {
	if s, ok := strings.CutPrefix(name, "gregor-"); ok {
		if n, err := strconv.ParseInt(s, 10, 32); err == nil {
			return int32(n)
		}
	}
	return int32(id & 0x7fffffff)
}

// raftStatusOf is the raft status etcd publishes as the expvar
// "raft.status", if it is member self's (see the file comment).
func raftStatusOf(self uint64) (raft.Status, bool) {
	f, ok := expvar.Get("raft.status").(expvar.Func)
	if !ok {
		return raft.Status{}, false
	}
	st, ok := f().(raft.Status)
	if !ok || st.ID != self {
		return raft.Status{}, false
	}
	return st, true
}
