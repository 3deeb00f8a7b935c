package broker

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync/atomic"

	"github.com/gregor-broker/gregor/metastore"
)

// configMaps are config maps by name, as the dynamic broker configs (by
// BROKER resource name: "" for the cluster-wide defaults, a node id for one
// broker's) and the group configs (by group id) are kept: a metastore
// collection with one record per name, the JSON object of its configs.
// On a single node the collection is a file under __meta in the format it
// always had, {"<field>": {"<name>": {"<config>": "<value>"}}}
// (openObjectFile); in a
// cluster it is etcd's /gregor/<collection>/<name>. A name without
// configs has no record.
type configMaps = map[string]map[string]string

// configMapStore is the view of one configMaps collection. Its readers
// pay an atomic load and a revision check; the collection is swapped for
// the cluster's when the broker joins one.
type configMapStore struct {
	v atomic.Pointer[metastore.View[configMaps]]
}

func (s *configMapStore) use(c metastore.Collection) {
	s.v.Store(metastore.NewView(c, decodeConfigMaps))
}

// all returns every name's configs; the maps are shared, read-only.
func (s *configMapStore) all() configMaps {
	if v := s.v.Load(); v != nil {
		return v.Get()
	}
	return nil
}

// of returns name's configs (nil when none), shared and read-only.
func (s *configMapStore) of(name string) map[string]string { return s.all()[name] }

var errConfigStoreNotReady = errors.New("the config store is not open yet")

// modify replaces name's configs by what change makes of the current ones
// (a copy it may modify; empty removes them), conditioned on them not
// changing meanwhile (change may run again on newer ones). It returns once
// this broker's view has the change: the revision made, 0 when nothing
// changed.
func (s *configMapStore) modify(ctx context.Context, name string, change func(cur map[string]string) (map[string]string, error)) (int64, error) {
	v := s.v.Load()
	if v == nil {
		return 0, errConfigStoreNotReady
	}
	return v.Collection().Modify(ctx, name, func(data []byte) ([]byte, error) {
		cur := map[string]string{}
		if data != nil {
			if err := json.Unmarshal(data, &cur); err != nil {
				return nil, err
			}
		}
		if cur == nil {
			cur = map[string]string{} // the record was JSON null
		}
		next, err := change(maps.Clone(cur))
		if err != nil || len(next) == 0 {
			return nil, err
		}
		if maps.Equal(cur, next) {
			return data, nil
		}
		return json.Marshal(next)
	})
}

// decodeConfigMaps decodes the records of a configMaps collection; a
// record that does not decode, or holds no configs, is left out (nothing
// but the broker writes them).
func decodeConfigMaps(recs metastore.Records) configMaps {
	out := make(configMaps, len(recs))
	for name, data := range recs {
		var cfg map[string]string
		if json.Unmarshal(data, &cfg) == nil && len(cfg) > 0 {
			out[name] = cfg
		}
	}
	return out
}
