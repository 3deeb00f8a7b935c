package broker

// Client quotas (package quota): the broker's settings for them and the
// store of their records; enforcement on the connection is in
// quota_enforce.go, connection creation rates in conn_quota.go, the
// controller mutation quota in mutation_quota.go.
//
// The quotas are a metastore collection: on a single node
// <data-dir>/__meta/quotas.json, replaced whole (storage.WriteFileAtomic),
// beside users.json and acls.json; in a cluster etcd's keys under
// /gregor/quotas/<entity id> (Cluster.Collection), in every broker's
// metadata snapshot, so each broker enforces a change as its watch
// delivers it (applyMetadata).

import (
	"path/filepath"
	"time"

	"github.com/gregor-broker/gregor/quota"
)

// quotasFileName is the single-node quota store under __meta.
const quotasFileName = "quotas.json"

// quotaTimeout bounds a quota change in the store.
const quotaTimeout = 10 * time.Second

// initQuotas makes the quota manager from the broker's settings and, on a
// single node, opens the quotas' file.
func (b *Broker) initQuotas() error {
	b.quotas = quota.New(quota.Config{
		Samples:          int(b.cfg.int64Prop("quota.window.num")),
		WindowMs:         b.cfg.int64Prop("quota.window.size.seconds") * 1000,
		MutationSamples:  int(b.cfg.int64Prop("controller.quota.window.num")),
		MutationWindowMs: b.cfg.int64Prop("controller.quota.window.size.seconds") * 1000,
		Log:              b.log,
	})
	if b.cfg.clusterConfigured() {
		return nil // the cluster's collection, once joined (startCluster)
	}
	f, err := openListFile(filepath.Join(b.cfg.DataDir, metaDirName, quotasFileName), "quotas", func(q *quota.Record) string { return q.Entity.ID() })
	if err != nil {
		return err
	}
	b.quotas.Use(f)
	return nil
}
