package broker

// DescribeDelegationToken: v1-3. Lists the unexpired tokens of the owners
// asked for (every owner when null) that the requester may see: its own,
// those it renews, and with the authorizer those of owners it has
// DESCRIBE_TOKENS on.

import (
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeDelegationToken, 1, 3, (*Broker).handleDescribeDelegationToken)
}

func (b *Broker) handleDescribeDelegationToken(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	switch {
	case !b.tokens.Enabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case !r.tokenRequestAllowed():
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	}
	if req.Owners != nil && len(req.Owners) == 0 {
		return resp, nil // an empty list describes nothing, as Kafka
	}
	var owners []string
	for _, o := range req.Owners {
		owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
	}
	me, now := r.principal(), b.cfg.Now()
	all := b.tokens.All()
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, c string) int {
		if d := all[a].IssueMs - all[c].IssueMs; d != 0 {
			return int(d)
		}
		return strings.Compare(a, c)
	})
	for _, id := range ids {
		tok := all[id]
		if tok.Expired(now) || (owners != nil && !slices.Contains(owners, tok.Owner)) {
			continue
		}
		if !tok.CanManage(me) && (!b.acl.Enabled() || !b.allowed(r, acl.DescribeTokens, acl.User, tok.Owner)) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = principalParts(tok.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = principalParts(tok.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = tok.IssueMs, tok.ExpiryMs, tok.MaxMs
		d.TokenID, d.HMAC = tok.ID, b.tokens.HMAC(tok.ID)
		for _, rn := range tok.Renewers {
			x := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			x.PrincipalType, x.PrincipalName = principalParts(rn)
			d.Renewers = append(d.Renewers, x)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}
