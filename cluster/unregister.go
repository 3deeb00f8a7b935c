package cluster

// Broker registrations that outlive their session, and UnregisterBroker.
//
// A broker's live registration, /gregor/brokers/<id>, is attached to its
// lease and vanishes when the session ends. Registering also writes
// /gregor/registered-brokers/<id> (the same JSON, no lease): the broker id
// stays registered after its session ends, as a KRaft broker's
// registration stays in the metadata log, fenced, until an operator
// unregisters it (Kafka's UnregisterBroker, kafka-cluster unregister). A
// registered id without a live registration is what Kafka calls a fenced
// broker (FencedBrokers, listed by DescribeCluster v2 with
// IncludeFencedBrokers).
//
// UnregisterBroker drops the lasting key only when the live one is gone.
// Kafka 4.4 also unregisters a broker that is alive (its partitions lose
// it and it stays unregistered until restarted); Gregor refuses that
// (ErrBrokerAlive): removing a live broker's lease-bound key before its
// lease expires would break the fencing argument of the package
// documentation (the controller would elect new leaders while the old one
// still believes its lease valid).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// UnregisterBroker forgets broker id: ErrBrokerNotRegistered if it never
// registered (or was unregistered already), ErrBrokerAlive while its
// session lasts.
func (n *Node) UnregisterBroker(ctx context.Context, id int32) error {
	live, reg := brokerKey(id), registeredKey(id)
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(live), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(reg), ">", 0)).
		Then(clientv3.OpDelete(reg)).
		Else(clientv3.OpGet(live, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return fmt.Errorf("cluster: unregister broker: %w", err)
	}
	if resp.Succeeded {
		n.log.Info("unregistered broker", "id", id)
		return nil
	}
	if resp.Responses[0].GetResponseRange().Count > 0 {
		return ErrBrokerAlive
	}
	return ErrBrokerNotRegistered
}

// FencedBrokers are the registered broker ids without a live registration
// (see above), as their last registration described them, by id.
func (n *Node) FencedBrokers(ctx context.Context) ([]Broker, error) {
	resp, err := n.cli.Txn(ctx).Then(clientv3.OpGet(keyRegistered, clientv3.WithPrefix()),
		clientv3.OpGet(keyBrokers, clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: registered brokers: %w", err)
	}
	live := map[string]bool{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		live[strings.TrimPrefix(string(kv.Key), keyBrokers)] = true
	}
	var out []Broker
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		var bj brokerJSON
		if live[strings.TrimPrefix(string(kv.Key), keyRegistered)] || json.Unmarshal(kv.Value, &bj) != nil {
			continue
		}
		out = append(out, Broker{ID: bj.ID, Host: bj.Host, Port: bj.Port, Rack: bj.Rack, Listeners: bj.Listeners})
	}
	slices.SortFunc(out, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	return out, nil
}
