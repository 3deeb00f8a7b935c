package broker

import (
	"encoding/base64"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestDelegationTokens: alice, authenticated with SCRAM, creates a token
// with bob as renewer; a client authenticating with the token's id and
// HMAC (SCRAM, tokenauth=true) acts as alice and may not create tokens;
// bob renews it, carol may not; Describe shows it to alice and bob only;
// once expired it no longer authenticates. Without a secret key, or over
// PLAINTEXT, token requests are refused with Kafka's codes.
func TestDelegationTokens(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"alice", "bob", "carol"} {
		if err := AddUser(dir, u, "SCRAM-SHA-256", u+"-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	pki := newTestPKI(t)
	_, addrs := secureBroker(t, pki, dir, map[string]string{"delegation.token.secret.key": "s3cret"})
	ctx := testCtx(t)
	as := func(user string) *kgo.Client {
		return newClient(t, addrs["SASL_PLAINTEXT"], kgo.SASL(scram.Auth{User: user, Pass: user + "-pw"}.AsSha256Mechanism()))
	}
	alice, bob, carol := as("alice"), as("bob"), as("carol")

	create := kmsg.NewPtrCreateDelegationTokenRequest()
	rn := kmsg.NewCreateDelegationTokenRequestRenewer()
	rn.PrincipalType, rn.PrincipalName = "User", "bob"
	create.Renewers, create.MaxLifetimeMillis = append(create.Renewers, rn), -1
	created, err := create.RequestWith(ctx, alice)
	if err != nil || created.ErrorCode != 0 || created.PrincipalName != "alice" || created.TokenID == "" || len(created.HMAC) != 64 {
		t.Fatalf("create: %+v %v", created, err)
	}
	if created.MaxTimestamp-created.IssueTimestamp != 7*24*3600*1000 || created.ExpiryTimestamp-created.IssueTimestamp != 24*3600*1000 {
		t.Fatalf("times: issue %d expiry %d max %d", created.IssueTimestamp, created.ExpiryTimestamp, created.MaxTimestamp)
	}

	if _, err := kadm.NewClient(alice).CreateTopic(ctx, 1, -1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	// The token authenticates as alice.
	tokenAuth := scram.Auth{User: created.TokenID, Pass: base64.StdEncoding.EncodeToString(created.HMAC), IsToken: true}
	tc := newClient(t, addrs["SASL_PLAINTEXT"], kgo.SASL(tokenAuth.AsSha512Mechanism()))
	if err := tc.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("via a token")}).FirstErr(); err != nil {
		t.Fatalf("produce with the token: %v", err)
	}
	if resp, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctx, tc); err != nil || resp.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over a token-authenticated connection: %+v %v", resp, err)
	}
	wrong := scram.Auth{User: created.TokenID, Pass: "bm90IHRoZSBobWFj", IsToken: true}
	if err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(wrong.AsSha512Mechanism())); err == nil {
		t.Fatal("a wrong HMAC authenticated")
	}

	renew := func(cl *kgo.Client, period int64) (*kmsg.RenewDelegationTokenResponse, error) {
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = created.HMAC, period
		return req.RequestWith(ctx, cl)
	}
	if r, err := renew(carol, 1000); err != nil || r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("carol renews: %+v %v", r, err)
	}
	if r, err := renew(bob, 3600*1000); err != nil || r.ErrorCode != 0 || r.ExpiryTimestamp < created.IssueTimestamp+3600*1000 || r.ExpiryTimestamp > created.ExpiryTimestamp {
		t.Fatalf("bob renews: %+v %v", r, err)
	}
	describe := func(cl *kgo.Client) int {
		t.Helper()
		resp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("describe: %+v %v", resp, err)
		}
		for _, d := range resp.TokenDetails {
			if d.TokenID != created.TokenID || d.PrincipalName != "alice" || len(d.Renewers) != 1 || d.Renewers[0].PrincipalName != "bob" {
				t.Fatalf("described %+v", d)
			}
		}
		return len(resp.TokenDetails)
	}
	if a, b, c := describe(alice), describe(bob), describe(carol); a != 1 || b != 1 || c != 0 {
		t.Fatalf("tokens described to alice, bob, carol: %d %d %d", a, b, c)
	}

	// Expired at once: gone, and no longer authenticates.
	exp := kmsg.NewPtrExpireDelegationTokenRequest()
	exp.HMAC, exp.ExpiryPeriodMillis = created.HMAC, -1
	if r, err := exp.RequestWith(ctx, alice); err != nil || r.ErrorCode != 0 {
		t.Fatalf("expire: %+v %v", r, err)
	}
	if n := describe(alice); n != 0 {
		t.Fatalf("%d tokens after expiry", n)
	}
	if err := pingErr(t, addrs["SASL_PLAINTEXT"], kgo.SASL(tokenAuth.AsSha512Mechanism())); err == nil {
		t.Fatal("an expired token authenticated")
	}
	if r, err := renew(alice, 1000); err != nil || r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew after expiry: %+v %v", r, err)
	}

	// Over PLAINTEXT: not allowed.
	plain := newClient(t, addrs["PLAINTEXT"])
	if r, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctx, plain); err != nil || r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over PLAINTEXT: %+v %v", r, err)
	}
}

// Without delegation.token.secret.key, token requests are answered
// DELEGATION_TOKEN_AUTH_DISABLED.
func TestDelegationTokens_DisabledWithoutSecret(t *testing.T) {
	_, addr := startBroker(t, "", nil)
	cl := newClient(t, addr)
	if r, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(testCtx(t), cl); err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create: %+v %v", r, err)
	}
	if r, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(testCtx(t), cl); err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("describe: %+v %v", r, err)
	}
}
