package authn

// Delegation tokens (KIP-48), as Kafka has them: a SASL-authenticated
// principal asks for a token (CreateDelegationToken) and hands its id and
// HMAC to a process that cannot hold its credentials; that process
// authenticates with SCRAM (either SCRAM mechanism) as the token's id with
// the base64 of the HMAC as its password and the SCRAM extension
// tokenauth=true, and acts as the token's owner until the token expires.
// The HMAC is HmacSHA512 of the token id under the cluster's
// delegation.token.secret.key, so it is never stored; the tokens are a
// metastore collection (one record per token id), shared by a cluster's
// brokers like the users.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/metastore"
)

// Token is one delegation token.
type Token struct {
	ID        string   `json:"id"`
	Owner     string   `json:"owner"`     // principal, "User:alice"
	Requester string   `json:"requester"` // principal that created it
	Renewers  []string `json:"renewers,omitempty"`
	IssueMs   int64    `json:"issue_ms"`
	ExpiryMs  int64    `json:"expiry_ms"`
	MaxMs     int64    `json:"max_ms"`
}

// Tokens is the delegation token store. Without a secret key it is
// disabled (Enabled false), as Kafka is without
// delegation.token.secret.key.
type Tokens struct {
	secret []byte
	view   atomic.Pointer[metastore.View[map[string]*Token]]
}

// NewTokens returns a store signing with secret; "" disables tokens.
func NewTokens(secret string) *Tokens { return &Tokens{secret: []byte(secret)} }

// Enabled reports whether tokens can be created and used.
func (t *Tokens) Enabled() bool { return t != nil && len(t.secret) > 0 }

// Use makes c the store of the tokens.
func (t *Tokens) Use(c metastore.Collection) {
	t.view.Store(metastore.NewView(c, func(recs metastore.Records) map[string]*Token {
		out := make(map[string]*Token, len(recs))
		for id, v := range recs {
			var tok Token
			if json.Unmarshal(v, &tok) == nil {
				out[id] = &tok
			}
		}
		return out
	}))
}

// All returns the tokens by id (expired ones included until removed),
// which the caller must not modify.
func (t *Tokens) All() map[string]*Token {
	if v := t.view.Load(); v != nil {
		return v.Get()
	}
	return nil
}

// HMAC is a token id's HMAC.
func (t *Tokens) HMAC(id string) []byte {
	m := hmac.New(sha512.New, t.secret)
	m.Write([]byte(id))
	return m.Sum(nil)
}

// ByHMAC returns the token with that HMAC, nil for none.
func (t *Tokens) ByHMAC(h []byte) *Token {
	for id, tok := range t.All() {
		if hmac.Equal(t.HMAC(id), h) {
			return tok
		}
	}
	return nil
}

// ErrNoTokenStore is returned before the store has a collection.
var ErrNoTokenStore = errors.New("no delegation token store yet")

// Put stores tok (a new token, or one renewed or expired).
func (t *Tokens) Put(ctx context.Context, tok *Token) error {
	v := t.view.Load()
	if v == nil {
		return ErrNoTokenStore
	}
	data, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	_, err = v.Collection().Update(ctx, metastore.Records{tok.ID: data}, nil)
	return err
}

// Delete removes tokens by id.
func (t *Tokens) Delete(ctx context.Context, ids ...string) error {
	v := t.view.Load()
	if v == nil {
		return ErrNoTokenStore
	}
	_, err := v.Collection().Update(ctx, nil, ids)
	return err
}

// NewTokenID draws a token id: 16 random bytes in URL-safe base64, as
// Kafka's (a UUID in base64).
func NewTokenID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenCredential is the SCRAM credential of a token: its HMAC in base64
// as the password, a fresh salt, Kafka's minimum iterations.
func (t *Tokens) tokenCredential(mech string, tok *Token) (Credential, error) {
	return NewCredential(mech, base64.StdEncoding.EncodeToString(t.HMAC(tok.ID)), MinScramIterations)
}

// CanManage reports whether principal may renew, expire or describe tok:
// its owner, or one of its renewers.
func (tok *Token) CanManage(principal string) bool {
	return tok.Owner == principal || slices.Contains(tok.Renewers, principal)
}

// Expired reports whether tok has expired at now.
func (tok *Token) Expired(now time.Time) bool { return now.UnixMilli() >= tok.ExpiryMs }
