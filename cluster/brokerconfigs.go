package cluster

import (
	"encoding/json"
	"strconv"
)

// The dynamic broker configs (resource type BROKER of AlterConfigs and
// IncrementalAlterConfigs, KIP-226) are the broker's "broker-configs"
// collection, /gregor/broker-configs/<resource name>: the key with the
// empty name holds the cluster-wide defaults, /gregor/broker-configs/<node
// id> one broker's own, each a JSON object of config name to value. The
// controller reads unclean.leader.election.enable from them.

// dynamicUnclean is unclean.leader.election.enable as the dynamic broker
// configs of m set it for the controller (node id ctrl): its own, else the
// cluster-wide default; ok is false when neither sets it.
func dynamicUnclean(m *Metadata, ctrl int32) (v, ok bool) {
	const name = "unclean.leader.election.enable"
	recs := m.Collections["broker-configs"].Records
	for _, res := range []string{strconv.Itoa(int(ctrl)), ""} {
		data, found := recs[res]
		if !found {
			continue
		}
		var cfg map[string]string
		if json.Unmarshal(data, &cfg) == nil {
			if s, set := cfg[name]; set {
				return s == "true", true
			}
		}
	}
	return false, false
}

// uncleanLeaderElection is unclean.leader.election.enable for a topic as
// the controller applies it: the topic's override, else def (the
// controller's dynamic config, else its static one).
func uncleanLeaderElection(m *Metadata, topic string, def bool) bool {
	if t := m.Topics[topic]; t != nil {
		if v, ok := t.Configs["unclean.leader.election.enable"]; ok {
			return v == "true"
		}
	}
	return def
}
