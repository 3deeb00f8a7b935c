package broker

// ExpireDelegationToken: v1-2. The token's owner or a renewer moves its
// expiry to now plus the expiry period, never past its maximum; a negative
// period expires it at once (it is removed).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ExpireDelegationToken, 1, 2, (*Broker).handleExpireDelegationToken)
}

func (b *Broker) handleExpireDelegationToken(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ExpireDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = b.changeTokenExpiry(r, req.HMAC, req.ExpiryPeriodMillis, true)
	return resp, nil
}
