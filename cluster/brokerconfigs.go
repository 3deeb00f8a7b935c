package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyBrokerConfigs holds the dynamic broker configs (resource type BROKER
// of AlterConfigs and IncrementalAlterConfigs, KIP-226),
// /gregor/broker-configs/<resource name>: the key with the empty name holds
// the cluster-wide defaults, /gregor/broker-configs/<node id> one broker's
// own. The value is a JSON object of config name to value. They are part of
// every Metadata snapshot (Metadata.BrokerConfigs), so every broker applies
// a cluster-wide default set through any of them.
const keyBrokerConfigs = "/gregor/broker-configs/"

func brokerConfigsKey(resource string) string { return keyBrokerConfigs + resource }

// uncleanLeaderElection is unclean.leader.election.enable for a topic as
// the controller (node id ctrl) applies it: the topic's override, else the
// controller's own dynamic broker config, else the cluster-wide dynamic
// default, else static (the controller's --config).
func uncleanLeaderElection(m *Metadata, topic string, ctrl int32, static bool) bool {
	const name = "unclean.leader.election.enable"
	if t := m.Topics[topic]; t != nil {
		if v, ok := t.Configs[name]; ok {
			return v == "true"
		}
	}
	for _, res := range []string{strconv.Itoa(int(ctrl)), ""} {
		if v, ok := m.BrokerConfigs[res][name]; ok {
			return v == "true"
		}
	}
	return static
}

// UpdateBrokerConfigs replaces the dynamic configs of a BROKER resource ("",
// the cluster-wide defaults, or a node id) by what update makes of those
// etcd holds, as UpdateGroupConfigs does for a group: conditioned on them,
// an empty result removing the key, an error from update returned with
// nothing written. It returns the etcd revision it produced (0 when nothing
// was written).
func (n *Node) UpdateBrokerConfigs(ctx context.Context, resource string, update func(current map[string]string) (map[string]string, error)) (int64, error) {
	return n.updateConfigMap(ctx, brokerConfigsKey(resource), fmt.Sprintf("broker configs of %q", resource), update)
}

// updateConfigMap is the compare-and-set update of a key holding a JSON
// object of config names to values.
func (n *Node) updateConfigMap(ctx context.Context, key, what string, update func(current map[string]string) (map[string]string, error)) (int64, error) {
	for range maxAttempts {
		resp, err := n.cli.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cluster: update %s: %w", what, err)
		}
		current := map[string]string{}
		var modRev int64
		if len(resp.Kvs) > 0 {
			modRev = resp.Kvs[0].ModRevision
			if err := json.Unmarshal(resp.Kvs[0].Value, &current); err != nil {
				return 0, fmt.Errorf("cluster: %s: %w", what, err)
			}
		}
		next, err := update(maps.Clone(current))
		if err != nil {
			return 0, err
		}
		if maps.Equal(current, next) {
			return 0, nil
		}
		var op clientv3.Op
		if len(next) == 0 {
			op = clientv3.OpDelete(key)
		} else {
			v, err := json.Marshal(next)
			if err != nil {
				return 0, err
			}
			op = clientv3.OpPut(key, string(v))
		}
		tr, err := n.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(op).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: update %s: %w", what, err)
		}
		if tr.Succeeded {
			return tr.Header.Revision, nil
		}
	}
	return 0, ErrConflict
}
