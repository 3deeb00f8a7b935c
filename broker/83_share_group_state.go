package broker

// InitializeShareGroupState: v0, DeleteShareGroupState: v0,
// ReadShareGroupStateSummary: v0-1 (inter-broker, KIP-932)
//
// In Kafka the group coordinator sends these to the share coordinator.
// Gregor's partition leaders cache the state they work on (package
// share's Cache, shares.go) and write it to the share coordinator
// (__share_group_state, 84_share_group_state_rw.go), so in a cluster the
// group coordinator sends these to the leaders, which keep their cache and
// the share coordinator in step: the offset admin APIs (90_share_group_offsets.go) read, set and
// remove the share-partition start offset (SPSO) where ShareFetch uses it,
// and a deleted share group's state is removed on every broker. Initialize
// and Read answer NOT_LEADER_OR_FOLLOWER for a partition this broker does
// not lead; Read reports StartOffset -1 for a partition without state.
// Delete removes this broker's state of each topic named, led here or not
// (a former leader's state is stale). They need CLUSTER_ACTION on the
// cluster when ACLs are enabled.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.InitializeShareGroupState, 0, 0, (*Broker).handleInitializeShareGroupState)
	register(kmsg.DeleteShareGroupState, 0, 0, (*Broker).handleDeleteShareGroupState)
	register(kmsg.ReadShareGroupStateSummary, 0, 1, (*Broker).handleReadShareGroupStateSummary)
	for _, k := range []kmsg.Key{kmsg.InitializeShareGroupState, kmsg.DeleteShareGroupState, kmsg.ReadShareGroupStateSummary} {
		aclChecks[k] = checkCluster(acl.ClusterAction)
	}
}

func (b *Broker) handleInitializeShareGroupState(r *request) (kmsg.Response, error) {
	return b.initializeShareGroupState(r.msg.(*kmsg.InitializeShareGroupStateRequest)), nil
}

func (b *Broker) initializeShareGroupState(req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewInitializeShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			_, code := b.shareTarget(rt.TopicID, rp.Partition)
			switch {
			case req.GroupID == "":
				code = kerr.InvalidGroupID.Code
			case code == 0 && rp.StartOffset < 0:
				code = kerr.InvalidRequest.Code
			case code == 0:
				code = b.setShareStart(req.GroupID, uuid(rt.TopicID), rp.Partition, rp.StartOffset)
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) handleDeleteShareGroupState(r *request) (kmsg.Response, error) {
	return b.deleteShareGroupState(r.msg.(*kmsg.DeleteShareGroupStateRequest)), nil
}

func (b *Broker) deleteShareGroupState(req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, rt := range req.Topics {
		if req.GroupID != "" && rt.TopicID != ([16]byte{}) {
			b.shares.Delete(req.GroupID, &rt.TopicID)
		}
		st := kmsg.NewDeleteShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			if req.GroupID == "" {
				sp.ErrorCode = kerr.InvalidGroupID.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) handleReadShareGroupStateSummary(r *request) (kmsg.Response, error) {
	return b.readShareGroupStateSummary(r.msg.(*kmsg.ReadShareGroupStateSummaryRequest)), nil
}

func (b *Broker) readShareGroupStateSummary(req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			sp.Partition, sp.StartOffset, sp.LeaderEpoch, sp.StateEpoch = rp.Partition, -1, -1, 0
			p, code := b.shareTarget(rt.TopicID, rp.Partition)
			if code == 0 {
				var s *coordinator.SharePartition
				if s, code = b.sharePartition(req.GroupID, p, false); s != nil {
					sp.StartOffset, sp.LeaderEpoch = s.StartOffset(), p.epoch.Load()
				}
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// shareLeaders groups partitions by their leader in the metadata; those
// without a leader are under -1.
func (b *Broker) shareLeaders(parts []topicIDPartition) map[int32][]topicIDPartition {
	out := map[int32][]topicIDPartition{}
	for _, tp := range parts {
		leader := int32(-1)
		if t := b.lookupTopicID(tp.TopicID); t != nil {
			if p := partitionAt(b.partitionsOf(t), tp.Partition); p != nil {
				if mp := p.meta.Load(); mp != nil {
					leader = mp.Leader
				}
			}
		}
		out[leader] = append(out[leader], tp)
	}
	return out
}

// shareStateRequest sends req to broker id, or answers it here when id is
// this broker.
func (b *Broker) shareStateRequest(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if id == b.nodeID {
		switch req := req.(type) {
		case *kmsg.InitializeShareGroupStateRequest:
			return b.initializeShareGroupState(req), nil
		case *kmsg.DeleteShareGroupStateRequest:
			return b.deleteShareGroupState(req), nil
		case *kmsg.ReadShareGroupStateSummaryRequest:
			return b.readShareGroupStateSummary(req), nil
		}
		return nil, fmt.Errorf("unexpected share state request %T", req)
	}
	if id < 0 {
		return nil, errors.New("no leader")
	}
	return b.peerRequest(ctx, id, req)
}

// shareStateResult is one partition's answer from its leader.
type shareStateResult struct {
	code        int16
	startOffset int64
	leaderEpoch int32
}

// forEachLeader runs send for every leader's partitions concurrently and
// gathers the results by partition; a leader that cannot be asked answers
// its partitions with failCode.
func (b *Broker) forEachLeader(parts []topicIDPartition, failCode int16, send func(ctx context.Context, leader int32, parts []topicIDPartition) (map[topicIDPartition]shareStateResult, error)) map[topicIDPartition]shareStateResult {
	ctx, cancel := context.WithTimeout(b.ctx, shareStateTimeout)
	defer cancel()
	out := map[topicIDPartition]shareStateResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, ps := range b.shareLeaders(parts) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := send(ctx, leader, ps)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				b.log.Info("share-partition state request to the leader failed", "leader", leader, "err", err)
			}
			for _, tp := range ps {
				r, ok := res[tp]
				if !ok {
					code := failCode
					if leader < 0 {
						code = kerr.LeaderNotAvailable.Code
					}
					r = shareStateResult{code: code, startOffset: -1, leaderEpoch: -1}
				}
				out[tp] = r
			}
		}()
	}
	wg.Wait()
	return out
}

// shareStartOffsetsOf returns group's SPSO of parts: this broker's on a
// single node, the leaders' in a cluster.
func (b *Broker) shareStartOffsetsOf(group string, parts []topicIDPartition) map[topicIDPartition]shareStateResult {
	if b.cluster != nil {
		return b.shareStartOffsets(group, parts)
	}
	states := b.shares.States(group)
	out := make(map[topicIDPartition]shareStateResult, len(parts))
	for _, tp := range parts {
		r := shareStateResult{startOffset: -1, leaderEpoch: -1}
		if sp := states[tp]; sp != nil {
			r.startOffset = sp.StartOffset()
			if t := b.lookupTopicID(tp.TopicID); t != nil {
				if p := partitionAt(b.partitionsOf(t), tp.Partition); p != nil {
					r.leaderEpoch = p.epoch.Load()
				}
			}
		}
		out[tp] = r
	}
	return out
}

// shareStartOffsets asks the leaders for group's SPSO of parts.
func (b *Broker) shareStartOffsets(group string, parts []topicIDPartition) map[topicIDPartition]shareStateResult {
	return b.forEachLeader(parts, kerr.CoordinatorNotAvailable.Code, func(ctx context.Context, leader int32, ps []topicIDPartition) (map[topicIDPartition]shareStateResult, error) {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = group
		byTopic := map[uuid]int{}
		for _, tp := range ps {
			i, ok := byTopic[tp.TopicID]
			if !ok {
				i = len(req.Topics)
				byTopic[tp.TopicID] = i
				rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
				rt.TopicID = tp.TopicID
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch = tp.Partition, -1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
		kresp, err := b.shareStateRequest(ctx, leader, req)
		if err != nil {
			return nil, err
		}
		out := map[topicIDPartition]shareStateResult{}
		for _, rt := range kresp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, rp := range rt.Partitions {
				out[topicIDPartition{TopicID: rt.TopicID, Partition: rp.Partition}] = shareStateResult{code: rp.ErrorCode, startOffset: rp.StartOffset, leaderEpoch: rp.LeaderEpoch}
			}
		}
		return out, nil
	})
}

// setShareStartOffsets asks the leaders to set group's SPSO of parts.
func (b *Broker) setShareStartOffsets(group string, offsets map[topicIDPartition]int64) map[topicIDPartition]shareStateResult {
	parts := make([]topicIDPartition, 0, len(offsets))
	for tp := range offsets {
		parts = append(parts, tp)
	}
	return b.forEachLeader(parts, kerr.CoordinatorNotAvailable.Code, func(ctx context.Context, leader int32, ps []topicIDPartition) (map[topicIDPartition]shareStateResult, error) {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = group
		byTopic := map[uuid]int{}
		for _, tp := range ps {
			i, ok := byTopic[tp.TopicID]
			if !ok {
				i = len(req.Topics)
				byTopic[tp.TopicID] = i
				rt := kmsg.NewInitializeShareGroupStateRequestTopic()
				rt.TopicID = tp.TopicID
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StartOffset = tp.Partition, offsets[tp]
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
		kresp, err := b.shareStateRequest(ctx, leader, req)
		if err != nil {
			return nil, err
		}
		out := map[topicIDPartition]shareStateResult{}
		for _, rt := range kresp.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				out[topicIDPartition{TopicID: rt.TopicID, Partition: rp.Partition}] = shareStateResult{code: rp.ErrorCode}
			}
		}
		return out, nil
	})
}

// deleteShareStatesEverywhere removes group's share-partition state of the
// topics (all when nil) on every live broker, this one included. It
// returns the first failure.
func (b *Broker) deleteShareStatesEverywhere(ctx context.Context, group string, topics []uuid) error {
	if topics == nil {
		b.mu.RLock()
		for id := range b.topicsByID {
			topics = append(topics, id)
		}
		b.mu.RUnlock()
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	for _, id := range topics {
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	var errs []error
	for _, id := range b.cluster.node.Metadata().BrokerIDs() {
		if _, err := b.shareStateRequest(ctx, id, req); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// shareStateTimeout bounds the coordinator's requests to the leaders.
const shareStateTimeout = 10 * time.Second
