package broker

// AddRaftVoter (80): v0-1, RemoveRaftVoter (81): v0 (KIP-853)
//
// What `kafka-metadata-quorum add-controller` and `remove-controller`
// send: change the KRaft controller quorum's voters. ALTER on the CLUSTER
// is required (CLUSTER_AUTHORIZATION_FAILED, acl_apis.go), as in Kafka.
//
// Gregor's quorum is etcd's raft group, one member per voter of
// controller.quorum.voters (cluster/). That list is static, as a KRaft
// quorum configured with controller.quorum.voters is: Gregor advertises
// kraft.version 0 only (features.go), and Kafka answers a static quorum
// (kraft.version 0) with UNSUPPORTED_VERSION, "Cluster doesn't support
// adding voter because the kraft.version feature is 0". Gregor answers as
// that Kafka does, after the checks Kafka makes first, in its order: a
// cluster id that is not null and not this cluster's is
// INCONSISTENT_CLUSTER_ID; a voter without a directory id (the zero uuid)
// is INVALID_REQUEST, as is an AddRaftVoter without an endpoint for the
// first of controller.listener.names.
//
// Why not etcd MemberAdd and MemberRemove: every node's own
// controller.quorum.voters would still name the old voter set. A removed
// member's node would be refused by the others at its next start (etcd
// does not let a removed member rejoin), and an added one would need to
// start its member with the cluster's current membership rather than the
// list it was given; neither matches what a static KRaft quorum does
// (docs/ARCHITECTURE.md, A cluster).

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AddRaftVoter, 0, 1, (*Broker).handleAddRaftVoter)
	register(kmsg.RemoveRaftVoter, 0, 0, (*Broker).handleRemoveRaftVoter)
}

// staticQuorumRefusal is Kafka's answer to a voter change on a quorum at
// kraft.version 0: the operation's verb ("adding", "removing").
func staticQuorumRefusal(verb string) (int16, string) {
	return kerr.UnsupportedVersion.Code, fmt.Sprintf("Cluster doesn't support %s voter because the kraft.version feature is 0", verb)
}

// voterRequestClusterID checks a voter request's cluster id as Kafka's raft
// client does: null or this cluster's.
func (b *Broker) voterRequestClusterID(id *string) (int16, string, bool) {
	if id == nil || *id == b.clusterID {
		return 0, "", true
	}
	return kerr.InconsistentClusterID.Code, fmt.Sprintf("The given id \"%s\" doesn't match the cluster id \"%s\"", *id, b.clusterID), false
}

func (b *Broker) handleAddRaftVoter(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	code, msg, ok := b.voterRequestClusterID(req.ClusterID)
	switch listener := controllerListenerNames(b.cfg.Props)[0]; {
	case !ok:
	case req.VoterID < 0 || req.VoterDirectoryID == [16]byte{}:
		code, msg = kerr.InvalidRequest.Code, "Add voter request didn't include a valid voter"
	case !hasListener(req.Listeners, listener):
		var eps []string
		for _, l := range req.Listeners {
			eps = append(eps, fmt.Sprintf("ListenerName(%s)=%s:%d", l.Name, l.Host, l.Port))
		}
		code, msg = kerr.InvalidRequest.Code, fmt.Sprintf("Add voter request didn't include the endpoint (Endpoints(endpoints={%s})) for the default listener ListenerName(%s)", strings.Join(eps, ", "), listener)
	default:
		code, msg = staticQuorumRefusal("adding")
	}
	resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
	return resp, nil
}

func hasListener(ls []kmsg.AddRaftVoterRequestListener, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

func (b *Broker) handleRemoveRaftVoter(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	code, msg, ok := b.voterRequestClusterID(req.ClusterID)
	switch {
	case !ok:
	case req.VoterID < 0 || req.VoterDirectoryID == [16]byte{}:
		code, msg = kerr.InvalidRequest.Code, "Remove voter request didn't include a valid voter"
	default:
		code, msg = staticQuorumRefusal("removing")
	}
	resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
	return resp, nil
}
