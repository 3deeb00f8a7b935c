package broker

// UnregisterBroker (64): v0
//
// What `kafka-cluster unregister --id N` sends: forget broker N's
// registration, so that a broker taken out of service for good is no
// longer listed (DescribeCluster v2 with IncludeFencedBrokers, kafka-cluster
// list-endpoints --include-fenced-brokers). ALTER on the CLUSTER is
// required (CLUSTER_AUTHORIZATION_FAILED, acl_apis.go), as in Kafka.
//
// In a cluster a broker id stays registered after its session ends, as a
// KRaft broker's registration stays in the metadata log, fenced (cluster/
// unregister.go): Metadata no longer lists it, DescribeCluster v2 lists it
// as fenced when asked. Unregistering such an id removes it; an id that
// never registered (or was unregistered already) is
// BROKER_ID_NOT_REGISTERED with Kafka's message ("Broker ID N is not
// currently registered").
//
// A live broker is refused with INVALID_REQUEST. Kafka 4.4 accepts it (its
// controller fences the broker, which stays unregistered until it is
// restarted); Gregor's registrations are etcd leases whose expiry is what
// lets another broker lead (cluster's # Fencing), so a live broker's
// registration is not removed by request: stop the broker, then unregister
// it. A single node's only registered broker is itself, always alive.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.UnregisterBroker, 0, 0, (*Broker).handleUnregisterBroker) }

// unregisterTimeout bounds the etcd transaction of an UnregisterBroker.
const unregisterTimeout = 10 * time.Second

func (b *Broker) handleUnregisterBroker(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	var err error
	if b.cluster == nil {
		err = metadata.ErrBrokerNotRegistered
		if req.BrokerID == b.nodeID {
			err = metadata.ErrBrokerAlive
		}
	} else {
		ctx, cancel := context.WithTimeout(r.ctx, unregisterTimeout)
		defer cancel()
		err = b.cluster.node.UnregisterBroker(ctx, req.BrokerID)
	}
	switch {
	case err == nil:
		b.log.Info("unregistered broker", "id", req.BrokerID)
		resp.ErrorMessage = kmsg.StringPtr("")
	case errors.Is(err, metadata.ErrBrokerNotRegistered):
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID))
	case errors.Is(err, metadata.ErrBrokerAlive):
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Broker %d is alive: Gregor unregisters a broker only after its session has ended; stop it first", req.BrokerID))
	default:
		b.log.Warn("unregister broker", "id", req.BrokerID, "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
	}
	return resp, nil
}
