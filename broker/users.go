package broker

// The SASL users (package security/authn's Users) are a metastore
// collection. On a single node the store is <data-dir>/__meta/users.json;
// `gregor users add` writes the same file offline, before the broker
// starts (as `kafka-storage format --add-scram` does) or while it runs,
// which then sees the change at the next authentication. In a cluster the
// users live in etcd under /gregor/users/<name> (Cluster.Collection
// ("users")), which every broker's metadata watch mirrors; the users of
// the local file are copied there at start when the cluster has none of
// that name.

import (
	"context"
	"maps"
	"path/filepath"
	"slices"

	"github.com/gregor-broker/gregor/metastore"
	"github.com/gregor-broker/gregor/security/authn"
)

// usersFileName is the single-node user store under __meta.
const usersFileName = "users.json"

// initUsers opens users.json; on a single node it is the store.
func (b *Broker) initUsers() error {
	b.users = authn.NewUsers(b.log)
	f, err := metastore.OpenFile(authn.UsersFile(filepath.Join(b.cfg.DataDir, metaDirName, usersFileName)))
	if err != nil {
		return err
	}
	b.localUsers = f
	if !b.cfg.clusterConfigured() {
		b.users.Use(f)
	}
	return nil
}

// seedClusterUsers copies the users of the local file into the cluster
// when it has none of that name (users added offline before a cluster's
// first start).
func (b *Broker) seedClusterUsers(ctx context.Context, cluster metastore.Collection) error {
	local, _ := b.localUsers.Snapshot()
	if len(local) == 0 {
		return nil
	}
	have, _ := cluster.Snapshot()
	put := metastore.Records{}
	for name, v := range local {
		if _, ok := have[name]; !ok {
			put[name] = v
		}
	}
	if len(put) == 0 {
		return nil
	}
	if _, err := cluster.Update(ctx, put, nil); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(put)) {
		b.log.Info("copied a user of the local store into the cluster", "user", name)
	}
	return nil
}

// AddUser stores a SCRAM credential for name in the user store of the data
// directory dataDir, without a running broker: `gregor users add`. The
// password itself is not stored. mechanism is SCRAM-SHA-256 or
// SCRAM-SHA-512; iterations 0 means 4096.
func AddUser(dataDir, name, mechanism, password string, iterations int) error {
	return authn.AddUser(filepath.Join(dataDir, metaDirName, usersFileName), name, mechanism, password, iterations)
}

// DeleteUser removes a user from the user store of dataDir, offline.
func DeleteUser(dataDir, name string) error {
	return authn.DeleteUser(filepath.Join(dataDir, metaDirName, usersFileName), name)
}
