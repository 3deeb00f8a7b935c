package broker

// CreateDelegationToken: v1-3 (v0 was removed in Kafka 4.0). See
// delegation_tokens.go.

import (
	"context"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.CreateDelegationToken, 1, 3, (*Broker).handleCreateDelegationToken)
}

func (b *Broker) handleCreateDelegationToken(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	requester := r.principal()
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		typ := "User"
		if req.OwnerPrincipalType != nil && *req.OwnerPrincipalType != "" {
			typ = *req.OwnerPrincipalType
		}
		owner = typ + ":" + *req.OwnerPrincipalName
	}
	resp.PrincipalType, resp.PrincipalName = principalParts(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = principalParts(requester)
	switch {
	case !b.tokens.Enabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case !r.tokenRequestAllowed():
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case owner != requester && !b.allowed(r, acl.CreateTokens, acl.User, owner):
		resp.ErrorCode = kerr.DelegationTokenAuthorizationFailed.Code
		return resp, nil
	}
	for _, rn := range req.Renewers {
		if rn.PrincipalType != "User" {
			resp.ErrorCode = kerr.InvalidPrincipalType.Code
			return resp, nil
		}
	}
	maxLife, expiry := b.tokenTimes()
	now := b.cfg.Now().UnixMilli()
	life := maxLife.Milliseconds()
	if req.MaxLifetimeMillis > 0 {
		life = min(life, req.MaxLifetimeMillis)
	}
	tok := &authn.Token{ID: authn.NewTokenID(), Owner: owner, Requester: requester, IssueMs: now, MaxMs: now + life}
	tok.ExpiryMs = min(now+expiry.Milliseconds(), tok.MaxMs)
	for _, rn := range req.Renewers {
		tok.Renewers = append(tok.Renewers, rn.PrincipalType+":"+rn.PrincipalName)
	}
	ctx, cancel := context.WithTimeout(r.ctx, metadataTimeout)
	defer cancel()
	if err := b.tokens.Put(ctx, tok); err != nil {
		b.log.Error("storing a delegation token", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp, nil
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = tok.IssueMs, tok.ExpiryMs, tok.MaxMs
	resp.TokenID, resp.HMAC = tok.ID, b.tokens.HMAC(tok.ID)
	b.log.Info("delegation token created", "owner", owner, "requester", requester, "token", tok.ID)
	return resp, nil
}
