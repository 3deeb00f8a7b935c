package authn

// The user store: SCRAM credentials by user name, against which SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN authenticate. Passwords are never stored: a
// credential is Kafka's (salt, iterations, StoredKey, ServerKey) of RFC 5802.
// PLAIN checks the password it is given against the user's SCRAM-SHA-256
// credential (else the SCRAM-SHA-512 one) by deriving the StoredKey from it
// with that credential's salt and iterations, so one credential serves both
// and nothing weaker than SCRAM's salted PBKDF2 hash is ever kept.
//
// The users are a metastore collection, a record per user (its JSON). On a
// single node it is a file (UsersFile: users.json, written whole and
// readable by its owner only, which `gregor users add` may replace while
// the broker runs); in a cluster, etcd's keys.

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
	"sync/atomic"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/metastore"
)

// Kafka's bounds on SCRAM iterations.
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// MechanismByte is a SCRAM mechanism's code in the SCRAM credential APIs
// (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), 0 for another name.
func MechanismByte(name string) int8 {
	switch name {
	case config.ScramSHA256:
		return 1
	case config.ScramSHA512:
		return 2
	}
	return 0
}

// MechanismName is MechanismByte's inverse, "" for an unknown code.
func MechanismName(b int8) string {
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

// Credential is what is stored for one user and SCRAM mechanism.
type Credential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
}

// User is one user: a credential per SCRAM mechanism.
type User struct {
	Scram map[string]Credential `json:"scram"`
}

// CredentialFromSalted derives the stored keys from a salted password
// (what AlterUserScramCredentials carries).
func CredentialFromSalted(mech string, salt, salted []byte, iterations int) Credential {
	h := scramHash(mech)
	mac := hmac.New(h, salted)
	mac.Write([]byte("Client Key"))
	clientKey := mac.Sum(nil)
	sh := h()
	sh.Write(clientKey)
	mac = hmac.New(h, salted)
	mac.Write([]byte("Server Key"))
	return Credential{Salt: salt, Iterations: iterations, StoredKey: sh.Sum(nil), ServerKey: mac.Sum(nil)}
}

func saltedPassword(mech, password string, salt []byte, iterations int) ([]byte, error) {
	h := scramHash(mech)
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// NewCredential salts and hashes a password.
func NewCredential(mech, password string, iterations int) (Credential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	salted, err := saltedPassword(mech, password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return CredentialFromSalted(mech, salt, salted, iterations), nil
}

// checkPassword tells whether password matches a credential.
func (c Credential) checkPassword(mech, password string) bool {
	salted, err := saltedPassword(mech, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	return hmac.Equal(CredentialFromSalted(mech, c.Salt, salted, c.Iterations).StoredKey, c.StoredKey)
}

// CheckPassword checks password as PLAIN does: against the user's
// SCRAM-SHA-256 credential, else its SCRAM-SHA-512 one.
func (u *User) CheckPassword(password string) bool {
	for _, mech := range []string{config.ScramSHA256, config.ScramSHA512} {
		if c, has := u.Scram[mech]; has {
			return c.checkPassword(mech, password)
		}
	}
	return false
}

// Users is the user store, read through a metastore view of the
// collection in use.
type Users struct {
	view atomic.Pointer[metastore.View[map[string]*User]]
	log  *slog.Logger
}

// NewUsers returns a store with no collection yet (its readers get
// ErrNoUserStore until Use); undecodable users are logged to log.
func NewUsers(log *slog.Logger) *Users { return &Users{log: log} }

// Use makes c the store of the users.
func (s *Users) Use(c metastore.Collection) {
	s.view.Store(metastore.NewView(c, s.decode))
}

// decode turns the stored records into users; one that does not decode
// is logged and ignored.
func (s *Users) decode(recs metastore.Records) map[string]*User {
	out := make(map[string]*User, len(recs))
	for name, v := range recs {
		var u User
		if err := json.Unmarshal(v, &u); err != nil {
			if s.log != nil {
				s.log.Warn("undecodable user in the metadata store, ignored", "user", name, "err", err)
			}
			continue
		}
		out[name] = &u
	}
	return out
}

// ErrNoUserStore is the answer before a cluster node has joined.
var ErrNoUserStore = errors.New("no user store yet")

// All returns every user by name, which the caller must not modify.
func (s *Users) All() (map[string]*User, error) {
	v := s.view.Load()
	if v == nil {
		return nil, ErrNoUserStore
	}
	return v.Get(), nil
}

// User returns a user, nil for an unknown one. It must not be modified.
func (s *Users) User(name string) (*User, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	return all[name], nil
}

// Modify replaces a user by what fn makes of it (a copy, with no
// credential when the user is unknown), conditioned on the user not
// changing meanwhile (fn may run again); a user left without a credential
// is removed. An error from fn is returned and nothing is written.
func (s *Users) Modify(ctx context.Context, name string, fn func(u *User) error) error {
	v := s.view.Load()
	if v == nil {
		return ErrNoUserStore
	}
	return modifyUser(ctx, v.Collection(), name, fn)
}

func modifyUser(ctx context.Context, c metastore.Collection, name string, fn func(u *User) error) error {
	_, err := c.Modify(ctx, name, func(cur []byte) ([]byte, error) {
		u := &User{}
		if cur != nil {
			if err := json.Unmarshal(cur, u); err != nil {
				return nil, fmt.Errorf("user %s: %w", name, err)
			}
		}
		u.Scram = maps.Clone(u.Scram)
		if u.Scram == nil {
			u.Scram = map[string]Credential{}
		}
		if err := fn(u); err != nil {
			return nil, err
		}
		if len(u.Scram) == 0 {
			return nil, nil
		}
		return json.Marshal(u)
	})
	return err
}

// UsersFile is a single node's user store file (users.json) as a metastore
// file: {"users": {name: user}}, written readable by its owner only; it is
// read again when another program (`gregor users add`) replaces it.
func UsersFile(path string) metastore.FileConfig {
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

// AddUser stores a SCRAM credential for name in the user store file at
// path, without a running broker (`gregor users add`). The password
// itself is not stored. mechanism is SCRAM-SHA-256 or SCRAM-SHA-512;
// iterations 0 means 4096.
func AddUser(path, name, mechanism, password string, iterations int) error {
	if name == "" {
		return errors.New("user name must not be empty")
	}
	if password == "" {
		return errors.New("password must not be empty")
	}
	if iterations == 0 {
		iterations = MinScramIterations
	}
	if MechanismByte(mechanism) == 0 {
		return fmt.Errorf("mechanism %q: want %s or %s", mechanism, config.ScramSHA256, config.ScramSHA512)
	}
	if iterations < MinScramIterations || iterations > MaxScramIterations {
		return fmt.Errorf("iterations %d: want %d to %d", iterations, MinScramIterations, MaxScramIterations)
	}
	cred, err := NewCredential(mechanism, password, iterations)
	if err != nil {
		return err
	}
	f, err := metastore.OpenFile(UsersFile(path))
	if err != nil {
		return err
	}
	return modifyUser(context.Background(), f, name, func(u *User) error {
		u.Scram[mechanism] = cred
		return nil
	})
}

// DeleteUser removes a user from the user store file at path, offline.
func DeleteUser(path, name string) error {
	f, err := metastore.OpenFile(UsersFile(path))
	if err != nil {
		return err
	}
	_, err = f.Update(context.Background(), nil, []string{name})
	return err
}
