package broker

// DescribeCluster: v0-2
//
// The cluster id, this broker as the only broker and the controller, and
// the cluster's authorized operations when asked. v1 adds the endpoint type
// (1 = brokers; asking for controllers, 2, is UNSUPPORTED_VERSION from a
// broker, as in Kafka); v2 lists fenced brokers too when asked
// (IncludeFencedBrokers): in a cluster, the broker ids registered whose
// session has ended, until UnregisterBroker drops them
// (64_unregister_broker.go); a single node has none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeCluster, 0, 2, (*Broker).handleDescribeCluster) }

func (b *Broker) handleDescribeCluster(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("The broker does not answer DescribeCluster for controller endpoints")
		return resp, nil
	}
	resp.ClusterID = b.clusterID
	brokers, controller := b.brokersView()
	resp.ControllerID = controller
	for _, br := range brokers {
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: br.id, Host: br.host, Port: br.port, Rack: br.rack})
	}
	if req.Version >= 2 && req.IncludeFencedBrokers && b.cluster != nil {
		ctx, cancel := context.WithTimeout(r.ctx, unregisterTimeout)
		defer cancel()
		fenced, err := b.cluster.node.FencedBrokers(ctx)
		if err != nil {
			b.log.Warn("describe cluster: fenced brokers", "err", err)
		}
		for _, br := range fenced {
			fb := kmsg.DescribeClusterResponseBroker{NodeID: br.ID, Host: br.Host, Port: br.Port, IsFenced: true}
			if br.Rack != "" {
				fb.Rack = kmsg.StringPtr(br.Rack)
			}
			resp.Brokers = append(resp.Brokers, fb)
		}
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterAuthorizedOps(r)
	}
	return resp, nil
}
