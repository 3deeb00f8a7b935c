package broker

// ListConfigResources (74): v0-1 (v0 was ListClientMetricsResources)
//
// v0 lists the CLIENT_METRICS subscriptions (kafka-client-metrics --list).
// v1 lists the resources of the types asked for, all of them when none
// is: as Kafka 4.4 answers (measured), groups with configs (GROUP, 32),
// the subscriptions (CLIENT_METRICS, 16), this broker's logger
// (BROKER_LOGGER, 8) and the live brokers (BROKER, 4), then the topics
// (TOPIC, 2), in that order (Gregor sorts names within a type; Kafka's
// order there is a hash map's). A type outside those is
// UNSUPPORTED_VERSION. DESCRIBE_CONFIGS on the CLUSTER is required
// (CLUSTER_AUTHORIZATION_FAILED), as in Kafka.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListConfigResources, 0, 1, (*Broker).handleListConfigResources) }

// listedConfigTypes are the types v1 lists, in Kafka's order.
var listedConfigTypes = []kmsg.ConfigResourceType{
	kmsg.ConfigResourceTypeGroupConfig,
	kmsg.ConfigResourceTypeClientMetrics,
	kmsg.ConfigResourceTypeBrokerLogger,
	kmsg.ConfigResourceTypeBroker,
	kmsg.ConfigResourceTypeTopic,
}

func (b *Broker) handleListConfigResources(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	types := []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	if req.Version >= 1 {
		types = listedConfigTypes
		if len(req.ResourceTypes) > 0 {
			types = nil
			for _, t := range listedConfigTypes {
				if slices.Contains(req.ResourceTypes, int8(t)) {
					types = append(types, t)
				}
			}
			for _, t := range req.ResourceTypes {
				if !slices.Contains(listedConfigTypes, kmsg.ConfigResourceType(t)) {
					resp.ErrorCode = kerr.UnsupportedVersion.Code
					return resp, nil
				}
			}
		}
	}
	add := func(t kmsg.ConfigResourceType, names []string) {
		for _, n := range names {
			c := kmsg.NewListConfigResourcesResponseConfigResource()
			c.Name, c.Type = n, int8(t)
			resp.ConfigResources = append(resp.ConfigResources, c)
		}
	}
	for _, t := range types {
		switch t {
		case kmsg.ConfigResourceTypeGroupConfig:
			add(t, b.groupsWithConfigs())
		case kmsg.ConfigResourceTypeClientMetrics:
			add(t, b.cm.Names())
		case kmsg.ConfigResourceTypeBrokerLogger:
			add(t, []string{strconv.Itoa(int(b.nodeID))})
		case kmsg.ConfigResourceTypeBroker:
			brokers, _ := b.brokersView()
			var ids []string
			for _, br := range brokers {
				ids = append(ids, strconv.Itoa(int(br.id)))
			}
			add(t, ids)
		case kmsg.ConfigResourceTypeTopic:
			b.mu.RLock()
			names := slices.Sorted(maps.Keys(b.topics))
			b.mu.RUnlock()
			add(t, names)
		}
	}
	return resp, nil
}

// groupsWithConfigs returns the groups that have dynamic configs, sorted.
func (b *Broker) groupsWithConfigs() []string {
	return slices.Sorted(maps.Keys(b.groupConfigs.all()))
}
