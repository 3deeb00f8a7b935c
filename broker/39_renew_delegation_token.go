package broker

// RenewDelegationToken: v1-2. The token's owner or a renewer moves its
// expiry to now plus the renew time (the broker's
// delegation.token.expiry.time.ms when negative), never past its maximum.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.RenewDelegationToken, 1, 2, (*Broker).handleRenewDelegationToken)
}

func (b *Broker) handleRenewDelegationToken(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.RenewDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = b.changeTokenExpiry(r, req.HMAC, req.RenewTimeMillis, false)
	return resp, nil
}
