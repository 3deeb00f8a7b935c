package broker

// FindCoordinator: v0-6
//
// A group (key type 0) is coordinated by the leader of its partition of
// __consumer_offsets; a transactional id (key type 1) by the leader of its
// partition of __transaction_state (txn_topic.go). v4+ batches keys and answers each with its own error.
// A share-partition (key type 2, "groupId:topicId:partition", v6+; the
// partition leaders' lookup of their share coordinator) by the leader of
// its partition of __share_group_state (share_state_topic.go). With the
// authorizer, a group key needs DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED), a transactional id DESCRIBE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), a share-partition key
// CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator, 0, 6, (*Broker).handleFindCoordinator) }

func (b *Broker) handleFindCoordinator(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (int32, string, int32, int16, *string) {
		if code := b.coordinatorKeyDenied(r, req.CoordinatorType, key); code != 0 {
			return -1, "", -1, code, nil
		}
		switch req.CoordinatorType {
		case 0:
			c, code := b.groupCoordinator(key)
			if code != 0 {
				return -1, "", -1, code, nil
			}
			return c.id, c.host, c.port, 0, nil
		case 1:
			c, code := b.txnCoordinator(key)
			if code != 0 {
				return -1, "", -1, code, nil
			}
			return c.id, c.host, c.port, 0, nil
		case 2:
			if req.Version < 6 {
				return -1, "", -1, kerr.InvalidRequest.Code, kmsg.StringPtr("share coordinator keys need FindCoordinator v6")
			}
			c, code := b.shareCoordinator(key)
			if code != 0 {
				return -1, "", -1, code, nil
			}
			return c.id, c.host, c.port, 0, nil
		default:
			return -1, "", -1, kerr.InvalidRequest.Code, kmsg.StringPtr("unsupported coordinator key type")
		}
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = key
			c.NodeID, c.Host, c.Port, c.ErrorCode, c.ErrorMessage = find(key)
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil
	}
	resp.NodeID, resp.Host, resp.Port, resp.ErrorCode, resp.ErrorMessage = find(req.CoordinatorKey)
	return resp, nil
}
