package broker

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"

	"github.com/gregor-broker/gregor/metastore"
	"github.com/gregor-broker/gregor/storage"
)

// writeJSONFile replaces the file at path by v, indented JSON, with
// storage.WriteFileAtomic.
func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return storage.WriteFileAtomic(path, data)
}

// openListFile opens a collection that a single node keeps as
// {"<field>": [record, ...]} in path (acls.json, quotas.json): each record
// is keyed by id(record) and stored as its JSON; the file lists them in
// key order, indented as writeJSONFile writes.
func openListFile[T any](path, field string, id func(*T) string) (*metastore.File, error) {
	return metastore.OpenFile(metastore.FileConfig{
		Path: path,
		Decode: func(data []byte) (metastore.Records, error) {
			var f map[string][]T
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, err
			}
			recs := metastore.Records{}
			for i := range f[field] {
				v, err := json.Marshal(&f[field][i])
				if err != nil {
					return nil, err
				}
				recs[id(&f[field][i])] = v
			}
			return recs, nil
		},
		Encode: func(recs metastore.Records) ([]byte, error) {
			list := make([]json.RawMessage, 0, len(recs))
			for _, k := range slices.Sorted(maps.Keys(recs)) {
				list = append(list, recs[k])
			}
			return json.MarshalIndent(map[string][]json.RawMessage{field: list}, "", "  ")
		},
		Write: storage.WriteFileAtomic,
	})
}

// openObjectFile opens a single node's collection kept in
// __meta/<name> as {"<field>": {"<key>": record, ...}}: the dynamic broker
// configs, the group configs, the feature levels, the delegation tokens.
func (b *Broker) openObjectFile(name, field string) (*metastore.File, error) {
	return metastore.OpenFile(metastore.FileConfig{
		Path: filepath.Join(b.cfg.DataDir, metaDirName, name),
		Decode: func(data []byte) (metastore.Records, error) {
			var f map[string]map[string]json.RawMessage
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, err
			}
			recs := metastore.Records{}
			for key, rec := range f[field] {
				recs[key] = rec
			}
			return recs, nil
		},
		Encode: func(recs metastore.Records) ([]byte, error) {
			obj := make(map[string]json.RawMessage, len(recs))
			for key, rec := range recs {
				obj[key] = rec
			}
			return json.MarshalIndent(map[string]map[string]json.RawMessage{field: obj}, "", "  ")
		},
		Write: storage.WriteFileAtomic,
	})
}
