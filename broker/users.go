package broker

// The user store: SCRAM credentials by user name, against which SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN authenticate. Passwords are never stored: a
// credential is Kafka's (salt, iterations, StoredKey, ServerKey) of RFC 5802.
// PLAIN checks the password it is given against the user's SCRAM-SHA-256
// credential (else the SCRAM-SHA-512 one) by deriving the StoredKey from it
// with that credential's salt and iterations, so one credential serves both
// and nothing weaker than SCRAM's salted PBKDF2 hash is ever kept.
//
// The users are a metastore collection. On a single node the store is
// <data-dir>/__meta/users.json, written whole (temporary file, fsync,
// rename; readable by its owner only); `gregor users add` writes the same
// file offline, before the broker starts (as `kafka-storage format
// --add-scram` does) or while it runs, which then sees the change at the
// next authentication. In a cluster the users live in etcd under
// /gregor/users/<name> (Cluster.Collection("users")), which every broker's
// metadata watch mirrors; the users of the local file are copied there at
// start when the cluster has none of that name.

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/metastore"
)

// usersFileName is the single-node user store under __meta.
const usersFileName = "users.json"

// Kafka's bounds on SCRAM iterations.
const (
	minScramIterations = 4096
	maxScramIterations = 16384
)

func scramMechanismByte(name string) int8 {
	switch name {
	case config.ScramSHA256:
		return 1
	case config.ScramSHA512:
		return 2
	}
	return 0
}

func scramMechanismName(b int8) string {
	switch b {
	case 1:
		return config.ScramSHA256
	case 2:
		return config.ScramSHA512
	}
	return ""
}

func scramHash(mech string) func() hash.Hash {
	if mech == config.ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// scramCredential is what is stored for one user and mechanism.
type scramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
}

// userRecord is one user: a credential per SCRAM mechanism.
type userRecord struct {
	Scram map[string]scramCredential `json:"scram"`
}

// credentialFromSalted derives the stored keys from a salted password
// (what AlterUserScramCredentials carries).
func credentialFromSalted(mech string, salt, salted []byte, iterations int) scramCredential {
	h := scramHash(mech)
	mac := hmac.New(h, salted)
	mac.Write([]byte("Client Key"))
	clientKey := mac.Sum(nil)
	sh := h()
	sh.Write(clientKey)
	mac = hmac.New(h, salted)
	mac.Write([]byte("Server Key"))
	return scramCredential{Salt: salt, Iterations: iterations, StoredKey: sh.Sum(nil), ServerKey: mac.Sum(nil)}
}

func saltedPassword(mech, password string, salt []byte, iterations int) ([]byte, error) {
	h := scramHash(mech)
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// newScramCredential salts and hashes a password.
func newScramCredential(mech, password string, iterations int) (scramCredential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	salted, err := saltedPassword(mech, password, salt, iterations)
	if err != nil {
		return scramCredential{}, err
	}
	return credentialFromSalted(mech, salt, salted, iterations), nil
}

// checkPassword tells whether password matches a credential (PLAIN).
func (c scramCredential) checkPassword(mech, password string) bool {
	salted, err := saltedPassword(mech, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	return hmac.Equal(credentialFromSalted(mech, c.Salt, salted, c.Iterations).StoredKey, c.StoredKey)
}

// userState is the user store: the users by name, read through a
// metastore view of the store in use (users.json on a single node, etcd's
// collection in a cluster).
type userState struct {
	// alterMu serialises AlterUserScramCredentials on this broker (its
	// read-modify-write of each user).
	alterMu sync.Mutex
	view    atomic.Pointer[metastore.View[map[string]*userRecord]]
	log     *slog.Logger
	// local is users.json, which a cluster node copies into the cluster
	// at start (seedClusterUsers); the store itself on a single node.
	local *metastore.File
}

// usersFile is users.json as a metastore file: {"users": {name: record}},
// a record per user, written readable by its owner only; `gregor users
// add` may replace it while a single node runs (Reread).
func usersFile(path string) metastore.FileConfig {
	return metastore.FileConfig{
		Path: path,
		Decode: func(data []byte) (metastore.Records, error) {
			var f struct {
				Users map[string]json.RawMessage `json:"users"`
			}
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, err
			}
			recs := metastore.Records{}
			for name, v := range f.Users {
				recs[name] = v
			}
			return recs, nil
		},
		Encode: func(recs metastore.Records) ([]byte, error) {
			users := make(map[string]json.RawMessage, len(recs))
			for name, v := range recs {
				users[name] = v
			}
			return json.MarshalIndent(struct {
				Users map[string]json.RawMessage `json:"users"`
			}{users}, "", "  ")
		},
		Write:  writePrivateFile,
		Reread: true,
	}
}

// writePrivateFile replaces the file at path with data durably (temporary
// file, fsync, rename, directory fsync), readable by its owner only.
func writePrivateFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// initUsers opens users.json; on a single node it is the store.
func (b *Broker) initUsers() error {
	b.userStore.log = b.log
	f, err := metastore.OpenFile(usersFile(filepath.Join(b.cfg.DataDir, metaDirName, usersFileName)))
	if err != nil {
		return err
	}
	b.userStore.local = f
	if !b.cfg.clusterConfigured() {
		b.userStore.use(f)
	}
	return nil
}

// use makes c the store of the users.
func (s *userState) use(c metastore.Collection) {
	s.view.Store(metastore.NewView(c, s.decode))
}

// decode turns the stored records into users; one that does not decode
// is logged and ignored.
func (s *userState) decode(recs metastore.Records) map[string]*userRecord {
	out := make(map[string]*userRecord, len(recs))
	for name, v := range recs {
		var rec userRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			if s.log != nil {
				s.log.Warn("undecodable user in the metadata store, ignored", "user", name, "err", err)
			}
			continue
		}
		out[name] = &rec
	}
	return out
}

// errNoUserStore is the answer before a cluster node has joined.
var errNoUserStore = errors.New("no user store yet")

// users returns every user by name, which the caller must not modify.
func (b *Broker) users() (map[string]*userRecord, error) {
	v := b.userStore.view.Load()
	if v == nil {
		return nil, errNoUserStore
	}
	return v.Get(), nil
}

// user returns a user's record, nil for an unknown user.
func (b *Broker) user(name string) (*userRecord, error) {
	all, err := b.users()
	if err != nil {
		return nil, err
	}
	return all[name], nil
}

// putUser stores rec for name, or removes the user when rec has no
// credential.
func (b *Broker) putUser(ctx context.Context, name string, rec *userRecord) error {
	v := b.userStore.view.Load()
	if v == nil {
		return errNoUserStore
	}
	return putUserRecord(ctx, v.Collection(), name, rec)
}

func putUserRecord(ctx context.Context, c metastore.Collection, name string, rec *userRecord) error {
	if rec == nil || len(rec.Scram) == 0 {
		_, err := c.Update(ctx, nil, []string{name})
		return err
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = c.Update(ctx, metastore.Records{name: v}, nil)
	return err
}

// seedClusterUsers copies the users of the local file into the cluster
// when it has none of that name (users added offline before a cluster's
// first start).
func (b *Broker) seedClusterUsers(ctx context.Context, cluster metastore.Collection) error {
	local, _ := b.userStore.local.Snapshot()
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
	if name == "" {
		return errors.New("user name must not be empty")
	}
	if password == "" {
		return errors.New("password must not be empty")
	}
	if iterations == 0 {
		iterations = minScramIterations
	}
	if scramMechanismByte(mechanism) == 0 {
		return fmt.Errorf("mechanism %q: want %s or %s", mechanism, config.ScramSHA256, config.ScramSHA512)
	}
	if iterations < minScramIterations || iterations > maxScramIterations {
		return fmt.Errorf("iterations %d: want %d to %d", iterations, minScramIterations, maxScramIterations)
	}
	cred, err := newScramCredential(mechanism, password, iterations)
	if err != nil {
		return err
	}
	f, err := metastore.OpenFile(usersFile(filepath.Join(dataDir, metaDirName, usersFileName)))
	if err != nil {
		return err
	}
	rec := &userRecord{Scram: map[string]scramCredential{}}
	recs, _ := f.Snapshot()
	if v, ok := recs[name]; ok {
		if err := json.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("user %s: %w", name, err)
		}
		if rec.Scram == nil {
			rec.Scram = map[string]scramCredential{}
		}
	}
	rec.Scram[mechanism] = cred
	return putUserRecord(context.Background(), f, name, rec)
}

// DeleteUser removes a user from the user store of dataDir, offline.
func DeleteUser(dataDir, name string) error {
	f, err := metastore.OpenFile(usersFile(filepath.Join(dataDir, metaDirName, usersFileName)))
	if err != nil {
		return err
	}
	return putUserRecord(context.Background(), f, name, nil)
}
