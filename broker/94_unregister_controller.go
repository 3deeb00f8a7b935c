package broker

// UnregisterController (94): v0 (KIP-1312)
//
// What `kafka-cluster unregister-controller --id N` (and
// `kafka-metadata-quorum remove-controller --unregister`) send: drop
// controller N's registration, which a KRaft controller keeps apart from
// its place in the quorum. ALTER on the CLUSTER is required
// (CLUSTER_AUTHORIZATION_FAILED, acl_apis.go), as in Kafka.
//
// Gregor's controllers are the voters of its static quorum (the etcd
// members of controller.quorum.voters, 80_raft_voters.go); there is no
// registration beside that. So, as Kafka 4.4 answers: an id that is not a
// voter is CONTROLLER_ID_NOT_REGISTERED ("Controller ID N is not currently
// registered."); the active controller (Metadata's controller id) is
// INVALID_REQUEST ("Controller cannot unregister itself while it is
// active."). Another voter is INVALID_REQUEST too: its registration is its
// place in the static voter set, which lasts while controller.quorum.voters
// names it.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.UnregisterController, 0, 0, (*Broker).handleUnregisterController) }

func (b *Broker) handleUnregisterController(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.UnregisterControllerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	voters := []int32{b.nodeID}
	if b.cluster != nil {
		ctx, cancel := context.WithTimeout(r.ctx, quorumForwardTimeout)
		defer cancel()
		q, err := b.cluster.node.DescribeQuorum(ctx)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
			return resp, nil
		}
		voters = voters[:0]
		for _, v := range q.Voters {
			voters = append(voters, v.NodeID)
		}
	}
	_, controller := b.brokersView()
	switch id := req.ControllerID; {
	case !slices.Contains(voters, id):
		resp.ErrorCode = kerr.ControllerIDNotRegistered.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Controller ID %d is not currently registered.", id))
	case id == controller:
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("Controller cannot unregister itself while it is active.")
	default:
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Controller %d is a voter of the static quorum (controller.quorum.voters): it stays registered while it is one.", id))
	}
	return resp, nil
}
