package broker

// Delegation tokens (KIP-48; package security/authn's Tokens): the four
// APIs (38-41), their store, and the removal of expired tokens. Enabled
// by delegation.token.secret.key (Kafka's name; its old name
// delegation.token.master.key too); without it every token request gets
// DELEGATION_TOKEN_AUTH_DISABLED. The tokens are a metastore collection:
// __meta/delegation-tokens.json on a single node, etcd's
// /gregor/delegation-tokens/ in a cluster (every broker must have the same
// secret key, as in Kafka).
//
// As Kafka: a token can be created only on a SASL-authenticated connection
// that did not authenticate with a token (else
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); its owner is the requester unless
// v3 names another (which needs CREATE_TOKENS on that USER); its owner and
// renewers may renew, expire and describe it (others need DESCRIBE_TOKENS
// on the owner to describe it); an expired token is refused at
// authentication and removed every delegation.token.expiry.check.interval.ms.

import (
	"context"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kerr"
)

const tokensFileName = "delegation-tokens.json"

// initTokens opens a single node's token store; a cluster's is its
// collection, once joined (startCluster).
func (b *Broker) initTokens() error {
	secret := b.cfg.Props["delegation.token.secret.key"]
	if secret == "" {
		secret = b.cfg.Props["delegation.token.master.key"]
	}
	b.tokens = authn.NewTokens(secret)
	if b.cfg.clusterConfigured() {
		return nil
	}
	f, err := b.openObjectFile(tokensFileName, "tokens")
	if err != nil {
		return err
	}
	b.tokens.Use(f)
	return nil
}

// tokenTimes are the broker's token lifetimes.
func (b *Broker) tokenTimes() (maxLifetime, expiry time.Duration) {
	return time.Duration(b.cfg.int64Prop("delegation.token.max.lifetime.ms")) * time.Millisecond,
		time.Duration(b.cfg.int64Prop("delegation.token.expiry.time.ms")) * time.Millisecond
}

// expireTokens removes expired tokens every
// delegation.token.expiry.check.interval.ms, while the broker runs.
func (b *Broker) expireTokens() {
	defer b.bg.Done()
	every := time.Duration(max(b.cfg.int64Prop("delegation.token.expiry.check.interval.ms"), 1000)) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		now := b.cfg.Now()
		var gone []string
		for id, tok := range b.tokens.All() {
			if tok.Expired(now) {
				gone = append(gone, id)
			}
		}
		if len(gone) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
		if err := b.tokens.Delete(ctx, gone...); err != nil {
			b.log.Warn("removing expired delegation tokens", "tokens", len(gone), "err", err)
		} else {
			b.log.Info("removed expired delegation tokens", "tokens", len(gone))
		}
		cancel()
	}
}

// tokenRequestAllowed reports whether r's connection may create or
// manage tokens: authenticated with SASL, not with a token. (Execute's
// callers are the broker's own.)
func (r *request) tokenRequestAllowed() bool {
	if r.conn == nil {
		return true
	}
	a := r.conn.auth
	return a != nil && a.phase == authDone && !a.token
}

// principalParts splits "User:alice".
func principalParts(p string) (typ, name string) {
	typ, name, ok := strings.Cut(p, ":")
	if !ok {
		return "User", p
	}
	return typ, name
}

// changeTokenExpiry renews (expire false) or expires the token with hmac
// as Kafka's DelegationTokenManager does, and returns the error code and
// the new expiry.
func (b *Broker) changeTokenExpiry(r *request, hmac []byte, periodMs int64, expire bool) (int16, int64) {
	switch {
	case !b.tokens.Enabled():
		return kerr.DelegationTokenAuthDisabled.Code, -1
	case !r.tokenRequestAllowed():
		return kerr.DelegationTokenRequestNotAllowed.Code, -1
	}
	tok := b.tokens.ByHMAC(hmac)
	if tok == nil {
		return kerr.DelegationTokenNotFound.Code, -1
	}
	if !tok.CanManage(r.principal()) {
		return kerr.DelegationTokenOwnerMismatch.Code, -1
	}
	now := b.cfg.Now().UnixMilli()
	if tok.Expired(b.cfg.Now()) {
		return kerr.DelegationTokenExpired.Code, -1
	}
	ctx, cancel := context.WithTimeout(r.ctx, metadataTimeout)
	defer cancel()
	if expire && periodMs < 0 {
		if err := b.tokens.Delete(ctx, tok.ID); err != nil {
			return kerr.KafkaStorageError.Code, -1
		}
		b.log.Info("delegation token expired", "token", tok.ID, "by", r.principal())
		return 0, now
	}
	if !expire && periodMs < 0 {
		_, e := b.tokenTimes()
		periodMs = e.Milliseconds()
	}
	next := *tok
	next.ExpiryMs = min(now+periodMs, tok.MaxMs)
	if err := b.tokens.Put(ctx, &next); err != nil {
		return kerr.KafkaStorageError.Code, -1
	}
	return 0, next.ExpiryMs
}
