package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/metastore"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Collections are state a broker keeps as cluster metadata, one key per
// record under /gregor/<name>/, the values the broker's JSON, opaque here;
// each is part of every Metadata snapshot (Metadata.Collections) with the
// revision of its last change, so every broker sees a change as soon as
// its watch delivers it, and decodes it again only then:
//
//	/gregor/acls/<id>         one ACL binding (the id is derived from the binding)
//	/gregor/quotas/<entity>   one client quota entity, named like Kafka's ZooKeeper config
//	                          paths (users/<user>/clients/<client-id>, users/<user>,
//	                          clients/<client-id>, ips/<ip>, names escaped, "<default>"
//	                          for a default entity)
//	/gregor/users/<name>      one SASL user's SCRAM credentials
//	/gregor/links/<key>       a cluster link, one of its mirror topics, a group it
//	                          synced (<link>, <link>/topics/<topic>,
//	                          <link>/groups/<group>), a broker's highest
//	                          mirrored producer id (@producer-ids/<node>)
//	/gregor/broker-configs/<name>  the dynamic broker configs of a BROKER resource ("" the
//	                          cluster-wide defaults, a node id one broker's), a JSON object
//	/gregor/group-configs/<group>  a group's dynamic configs, a JSON object
//	/gregor/client-metrics/<name>  a KIP-714 client metrics subscription
//	/gregor/delegation-tokens/<id>  a delegation token (owner, renewers, times; never its HMAC)
//	/gregor/features/finalized  the finalized feature levels changed by UpdateFeatures
//	                          and their epoch, a JSON object
var collectionNames = []string{"acls", "quotas", "users", "links", "broker-configs", "group-configs", "client-metrics", "delegation-tokens", "features"}

func collectionPrefix(name string) string { return keyPrefix + name + "/" }

// collectionOf returns the collection a key belongs to and the record's
// key within it; ok is false for a key of no collection. It neither
// allocates nor builds a prefix: the snapshot asks it of every key.
func collectionOf(key string) (name, record string, ok bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", "", false
	}
	name, record, ok = strings.Cut(rest, "/")
	if !ok || !slices.Contains(collectionNames, name) {
		return "", "", false
	}
	return name, record, true
}

// Collection returns the named collection (one of collectionNames) as the
// broker uses it. It panics on a name this package does not keep.
func (n *Node) Collection(name string) metastore.Collection {
	if !slices.Contains(collectionNames, name) {
		panic("cluster: no collection " + name)
	}
	return &collection{n: n, name: name}
}

type collection struct {
	n    *Node
	name string
}

// Snapshot implements metastore.Collection from the latest metadata.
func (c *collection) Snapshot() (metastore.Records, int64) {
	m := c.n.Metadata()
	if m == nil {
		return nil, 0
	}
	rs := m.Collections[c.name]
	return rs.Records, rs.Revision
}

// Update implements metastore.Collection: put and del in one transaction,
// then a wait until this node's metadata has it.
func (c *collection) Update(ctx context.Context, put metastore.Records, del []string) (int64, error) {
	prefix := collectionPrefix(c.name)
	var ops []clientv3.Op
	for k, v := range put {
		ops = append(ops, clientv3.OpPut(prefix+k, string(v)))
	}
	for _, k := range del {
		ops = append(ops, clientv3.OpDelete(prefix+k))
	}
	if len(ops) == 0 {
		return 0, nil
	}
	resp, err := c.n.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: update %s: %w", c.name, err)
	}
	if _, err := c.n.WaitForRevision(ctx, resp.Header.Revision); err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// Modify implements metastore.Collection: the record is read from etcd
// (not the mirror, which may be behind), and the write is conditioned on
// its mod revision, then waited for as Update's is.
// maxModifyAttempts bounds Modify's conditional writes (about 4 s of
// backoff in all).
const maxModifyAttempts = 200

func (c *collection) Modify(ctx context.Context, key string, fn func(cur []byte) ([]byte, error)) (int64, error) {
	k := collectionPrefix(c.name) + key
	// Each lost race means another writer's change landed, so the writers
	// as a whole progress; a loser backs off a little (jittered, growing
	// to 20 ms) so that under load one writer does not lose every round.
	for attempt := range maxModifyAttempts {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(rand.Int64N(int64(min(attempt, 20))*int64(time.Millisecond)) + 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, fmt.Errorf("cluster: update %s: %w", c.name, ctx.Err())
			case <-t.C:
			}
		}
		resp, err := c.n.cli.Get(ctx, k)
		if err != nil {
			return 0, fmt.Errorf("cluster: update %s: %w", c.name, err)
		}
		var cur []byte
		var modRev int64
		if len(resp.Kvs) > 0 {
			cur, modRev = resp.Kvs[0].Value, resp.Kvs[0].ModRevision
		}
		next, err := fn(cur)
		if err != nil {
			return 0, err
		}
		if (next == nil && modRev == 0) || (next != nil && modRev != 0 && bytes.Equal(next, cur)) {
			return 0, nil
		}
		op := clientv3.OpPut(k, string(next))
		if next == nil {
			op = clientv3.OpDelete(k)
		}
		tr, err := c.n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", modRev)).Then(op).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: update %s: %w", c.name, err)
		}
		if !tr.Succeeded {
			continue
		}
		if _, err := c.n.WaitForRevision(ctx, tr.Header.Revision); err != nil {
			return 0, err
		}
		return tr.Header.Revision, nil
	}
	return 0, metastore.ErrConflict
}
