package cluster

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyGroupConfigs holds the dynamic group configs (resource type GROUP of
// IncrementalAlterConfigs, KIP-848 and KIP-932), /gregor/group-configs/<group>:
// one key per group that sets any, its value a JSON object of config name
// to value. The group id is the rest of the key, whatever its characters.
// They are part of every Metadata snapshot (Metadata.GroupConfigs), so a
// partition leader uses a share group's configs set through any broker, as
// Kafka's brokers read them from the metadata log.
const keyGroupConfigs = "/gregor/group-configs/"

func groupConfigsKey(group string) string { return keyGroupConfigs + group }

// UpdateGroupConfigs replaces a group's configs by what update makes of
// those etcd holds (empty when none), in a transaction conditioned on them,
// so a change made through another broker in between is never lost; an
// empty result removes the key. An error from update ends it unchanged and
// is returned. It returns the etcd revision it produced (0 when nothing
// was written); WaitForRevision with it makes the change visible to the
// caller's own snapshots.
func (n *Node) UpdateGroupConfigs(ctx context.Context, group string, update func(current map[string]string) (map[string]string, error)) (int64, error) {
	return n.updateConfigMap(ctx, groupConfigsKey(group), fmt.Sprintf("group configs of %q", group), update)
}

// DeleteGroupConfigs removes a group's configs unless they were changed
// after etcd revision rev (a deleted group's configs, as of the metadata
// the caller saw, never a newer setting).
func (n *Node) DeleteGroupConfigs(ctx context.Context, group string, rev int64) error {
	key := groupConfigsKey(group)
	_, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "<", rev+1)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("cluster: delete group configs: %w", err)
	}
	return nil
}
