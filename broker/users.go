package broker

// The user store: SCRAM credentials by user name, against which SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN authenticate. Passwords are never stored: a
// credential is Kafka's (salt, iterations, StoredKey, ServerKey) of RFC 5802.
// PLAIN checks the password it is given against the user's SCRAM-SHA-256
// credential (else the SCRAM-SHA-512 one) by deriving the StoredKey from it
// with that credential's salt and iterations, so one credential serves both
// and nothing weaker than SCRAM's salted PBKDF2 hash is ever kept.
//
// On a single node the store is <data-dir>/__meta/users.json, written whole
// (temporary file, fsync, rename) under usersMu; `gregor users add` writes
// the same file offline, before the broker starts (as `kafka-storage format
// --add-scram` does). In a cluster the users live in etcd under
// /gregor/users/<name> (Cluster.User and PutUser); the users of the
// local file are copied there at start when etcd has none of that name.

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
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// usersFileName is the single-node user store under __meta.
const usersFileName = "users.json"

// SCRAM mechanisms, as named in SASL and numbered in
// DescribeUserScramCredentials / AlterUserScramCredentials.
const (
	mechScramSHA256 = "SCRAM-SHA-256"
	mechScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on SCRAM iterations.
const (
	minScramIterations = 4096
	maxScramIterations = 16384
)

func scramMechanismByte(name string) int8 {
	switch name {
	case mechScramSHA256:
		return 1
	case mechScramSHA512:
		return 2
	}
	return 0
}

func scramMechanismName(b int8) string {
	switch b {
	case 1:
		return mechScramSHA256
	case 2:
		return mechScramSHA512
	}
	return ""
}

func scramHash(mech string) func() hash.Hash {
	if mech == mechScramSHA512 {
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

// userStore keeps the users. get returns nil, nil for an unknown user.
type userStore interface {
	get(ctx context.Context, name string) (*userRecord, error)
	// put stores rec for name, or removes the user when rec is nil.
	put(ctx context.Context, name string, rec *userRecord) error
	list(ctx context.Context) (map[string]*userRecord, error)
}

// fileUserStore is the single-node store.
type fileUserStore struct {
	mu   sync.Mutex
	path string
	// alterMu serialises AlterUserScramCredentials on this broker (its
	// read-modify-write of each user), whichever store is in use.
	alterMu sync.Mutex
}

func (s *fileUserStore) readLocked() (map[string]*userRecord, error) {
	var f struct {
		Users map[string]*userRecord `json:"users"`
	}
	if _, err := readJSONFile(s.path, &f); err != nil {
		return nil, err
	}
	if f.Users == nil {
		f.Users = map[string]*userRecord{}
	}
	return f.Users, nil
}

func (s *fileUserStore) writeLocked(users map[string]*userRecord) error {
	b, err := json.MarshalIndent(struct {
		Users map[string]*userRecord `json:"users"`
	}{users}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
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
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func (s *fileUserStore) get(_ context.Context, name string) (*userRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	users, err := s.readLocked()
	if err != nil {
		return nil, err
	}
	return users[name], nil
}

func (s *fileUserStore) put(_ context.Context, name string, rec *userRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	users, err := s.readLocked()
	if err != nil {
		return err
	}
	if rec == nil || len(rec.Scram) == 0 {
		delete(users, name)
	} else {
		users[name] = rec
	}
	return s.writeLocked(users)
}

func (s *fileUserStore) list(context.Context) (map[string]*userRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readLocked()
}

// etcdUserStore is the cluster's store.
type etcdUserStore struct{ b *Broker }

func (s etcdUserStore) get(ctx context.Context, name string) (*userRecord, error) {
	v, err := s.b.cl.node.User(ctx, name)
	if err != nil || v == nil {
		return nil, err
	}
	var rec userRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("user %s: %w", name, err)
	}
	return &rec, nil
}

func (s etcdUserStore) put(ctx context.Context, name string, rec *userRecord) error {
	if rec == nil || len(rec.Scram) == 0 {
		return s.b.cl.node.PutUser(ctx, name, nil)
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.b.cl.node.PutUser(ctx, name, v)
}

func (s etcdUserStore) list(ctx context.Context) (map[string]*userRecord, error) {
	all, err := s.b.cl.node.Users(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*userRecord{}
	for name, v := range all {
		var rec userRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return nil, fmt.Errorf("user %s: %w", name, err)
		}
		out[name] = &rec
	}
	return out, nil
}

// users returns the store in use: etcd in a cluster, else the file.
func (b *Broker) users() userStore {
	if b.cl != nil {
		return etcdUserStore{b}
	}
	return b.localUsers
}

// seedClusterUsers copies the users of the local file into etcd when etcd
// has none of that name (users added offline before a cluster's first
// start).
func (b *Broker) seedClusterUsers(ctx context.Context) error {
	local, err := b.localUsers.list(ctx)
	if err != nil || len(local) == 0 {
		return err
	}
	names := make([]string, 0, len(local))
	for n := range local {
		names = append(names, n)
	}
	sort.Strings(names)
	st := etcdUserStore{b}
	for _, n := range names {
		if cur, err := st.get(ctx, n); err != nil {
			return err
		} else if cur != nil {
			continue
		}
		if err := st.put(ctx, n, local[n]); err != nil {
			return err
		}
		b.log.Info("copied a user of the local store into the cluster", "user", n)
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
		return fmt.Errorf("mechanism %q: want %s or %s", mechanism, mechScramSHA256, mechScramSHA512)
	}
	if iterations < minScramIterations || iterations > maxScramIterations {
		return fmt.Errorf("iterations %d: want %d to %d", iterations, minScramIterations, maxScramIterations)
	}
	cred, err := newScramCredential(mechanism, password, iterations)
	if err != nil {
		return err
	}
	s := &fileUserStore{path: filepath.Join(dataDir, metaDirName, usersFileName)}
	rec, err := s.get(context.Background(), name)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = &userRecord{Scram: map[string]scramCredential{}}
	}
	rec.Scram[mechanism] = cred
	return s.put(context.Background(), name, rec)
}

// DeleteUser removes a user from the user store of dataDir, offline.
func DeleteUser(dataDir, name string) error {
	s := &fileUserStore{path: filepath.Join(dataDir, metaDirName, usersFileName)}
	return s.put(context.Background(), name, nil)
}
