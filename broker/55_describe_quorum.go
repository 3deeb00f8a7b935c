package broker

// DescribeQuorum (55): v0-2
//
// What `kafka-metadata-quorum describe --status` and `--replication` ask
// for: the metadata quorum's leader, epoch and high watermark and each
// voter's and observer's log end offset and last fetch and caught-up
// times, for the partition __cluster_metadata-0 (anything else is
// UNKNOWN_TOPIC_OR_PARTITION in each partition asked for, as Kafka
// answers). v1 adds the timestamps; v2 the directory ids (Gregor has
// none: the zero uuid, which Kafka also sends for voters formatted
// without one), the error messages and the voters' endpoints (Nodes).
//
// In a cluster the quorum is etcd's raft group (cluster.Node's
// DescribeQuorum: raft leader, term as epoch, commit index as high
// watermark, raft indexes as log ends). Only the broker whose member is
// the raft leader knows the followers' progress, so another broker
// forwards the request to it, as a Kafka broker forwards DescribeQuorum to
// the active controller; a request from another broker (client id
// gregor-broker-N) is never forwarded again, and if the leader cannot be
// reached the broker answers with what its own member knows (the other
// voters' offsets -1). The voters' endpoints are their raft peer
// addresses (controller.quorum.voters) under the first of
// controller.listener.names; brokers that are not etcd members (they
// reach an external etcd through etcd.endpoints) are observers, with
// offsets -1, since they keep no raft log.
//
// A single node, which has no quorum log, answers as a single-node KRaft
// combined broker does: itself the leader and only voter, in epoch 1, with
// the last fetch and caught-up times now, and as high watermark and log
// end offset the number of records a KRaft metadata log would need for
// what the node holds (its registration, one record per topic and one per
// partition); it grows as topics and partitions are created. The voter's
// endpoint is named by the first of controller.listener.names (CONTROLLER),
// as a combined KRaft node's is, with the address of the node's listener
// of that name if it has one, else of its first listener: a single node
// has no quorum peers to dial it, and answers the quorum's requests on its
// Kafka listener.
//
// DESCRIBE on the CLUSTER is required (CLUSTER_AUTHORIZATION_FAILED,
// acl_apis.go), as in Kafka.

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeQuorum, 0, 2, (*Broker).handleDescribeQuorum) }

// metadataTopic is the name of KRaft's metadata log.
const metadataTopic = "__cluster_metadata"

// quorumForwardTimeout bounds a DescribeQuorum forwarded to the raft leader's broker.
const quorumForwardTimeout = 5 * time.Second

func (b *Broker) handleDescribeQuorum(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if req.Version >= 2 {
		resp.ErrorMessage = kmsg.StringPtr("")
	}
	if len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeQuorumResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.Partition = rp.Partition
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if req.Version >= 2 {
					p.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	var (
		q         *metadata.QuorumState
		endpoints map[int32]map[string]metadata.Endpoint
	)
	if b.cluster == nil {
		q, endpoints = b.singleNodeQuorum()
	} else {
		ctx, cancel := context.WithTimeout(r.ctx, quorumForwardTimeout)
		defer cancel()
		var err error
		q, err = b.cluster.node.DescribeQuorum(ctx)
		if err != nil {
			b.log.Warn("describe quorum", "err", err)
			resp.ErrorCode = kerr.UnknownServerError.Code
			if req.Version >= 2 {
				resp.ErrorMessage = kmsg.StringPtr(err.Error())
			}
			return resp, nil
		}
		if q.LeaderID >= 0 && q.LeaderID != b.nodeID && !fromPeer(r) {
			if kresp, err := b.peerRequest(ctx, q.LeaderID, req); err == nil {
				if fwd, ok := kresp.(*kmsg.DescribeQuorumResponse); ok {
					return fwd, nil
				}
			} else {
				b.log.Info("describe quorum: the raft leader's broker did not answer; answering from this member", "leader", q.LeaderID, "err", err)
			}
		}
		name := controllerListenerNames(b.cfg.Props)[0]
		endpoints = map[int32]map[string]metadata.Endpoint{}
		for _, v := range q.Voters {
			if v.Host != "" {
				endpoints[v.NodeID] = map[string]metadata.Endpoint{name: {Host: v.Host, Port: v.Port}}
			}
		}
	}
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	if req.Version >= 2 {
		p.ErrorMessage = kmsg.StringPtr("")
	}
	p.LeaderID = q.LeaderID
	p.LeaderEpoch = int32(min(q.LeaderEpoch, math.MaxInt32))
	p.HighWatermark = q.HighWatermark
	p.CurrentVoters = replicaStates(q.Voters)
	p.Observers = replicaStates(q.Observers)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadataTopic
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if req.Version >= 2 {
		for _, v := range q.Voters {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.NodeID
			names := make([]string, 0, len(endpoints[v.NodeID]))
			for name := range endpoints[v.NodeID] {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				ep := endpoints[v.NodeID][name]
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = name, ep.Host, uint16(ep.Port)
				n.Listeners = append(n.Listeners, l)
			}
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp, nil
}

// fromPeer reports whether r came from another broker's inter-broker
// client (interbroker.go names it gregor-broker-N).
func fromPeer(r *request) bool {
	return r.hdr.ClientID != nil && strings.HasPrefix(*r.hdr.ClientID, "gregor-broker-")
}

// singleNodeQuorum is a single node's quorum (see the file comment) and
// its voter's endpoints.
func (b *Broker) singleNodeQuorum() (*metadata.QuorumState, map[int32]map[string]metadata.Endpoint) {
	records := int64(1) // the broker's registration
	b.mu.RLock()
	for _, t := range b.topics {
		records += 1 + int64(len(t.partitions))
	}
	b.mu.RUnlock()
	now := b.cfg.Now()
	q := &metadata.QuorumState{LeaderID: b.nodeID, LeaderEpoch: 1, HighWatermark: records,
		Voters: []metadata.ReplicaState{{NodeID: b.nodeID, LogEndOffset: records, LastFetch: now, LastCaughtUp: now}}}
	return q, map[int32]map[string]metadata.Endpoint{b.nodeID: b.singleNodeVoterEndpoint()}
}

// singleNodeVoterEndpoint is a single node's voter endpoint: named, as a
// KRaft voter's is, by the first of controller.listener.names; its address
// that listener's when the node has one, else the node's first listener's,
// where it answers what a KRaft controller answers (DescribeQuorum,
// UpdateFeatures and the voter APIs).
func (b *Broker) singleNodeVoterEndpoint() map[string]metadata.Endpoint {
	name := controllerListenerNames(b.cfg.Props)[0]
	eps := b.advertisedEndpoints()
	if ep, ok := eps[name]; ok {
		return map[string]metadata.Endpoint{name: ep}
	}
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	if len(b.srv.listeners) == 0 {
		return eps
	}
	l := b.srv.listeners[0]
	return map[string]metadata.Endpoint{name: {Host: l.advHost, Port: l.advPort}}
}

func replicaStates(rs []metadata.ReplicaState) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(rs))
	for _, s := range rs {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID = s.NodeID
		v.LogEndOffset = s.LogEndOffset
		v.LastFetchTimestamp = unixMilliOrUnknown(s.LastFetch)
		v.LastCaughtUpTimestamp = unixMilliOrUnknown(s.LastCaughtUp)
		out = append(out, v)
	}
	return out
}

func unixMilliOrUnknown(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
