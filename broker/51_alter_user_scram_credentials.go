package broker

// AlterUserScramCredentials: v0 (flexible). Upsertions carry the salt and
// the salted password (the client derives it, the password never travels);
// the broker keeps the StoredKey and ServerKey derived from them. One
// result per user named; a user with any invalid alteration (empty name,
// unknown mechanism, iterations outside 4096-16384, the same credential
// altered twice, deleting a credential that does not exist) is left as it
// was, with Kafka's error codes and messages. With the authorizer it needs
// ALTER on the cluster (acl_apis.go).

import (
	"context"

	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Broker).handleAlterUserScramCredentials)
}

// scramAlteration is one deletion (salted == nil) or upsertion.
type scramAlteration struct {
	mech       string
	mechByte   int8
	iterations int32
	salt       []byte
	salted     []byte
	deletion   bool
}

func (b *Broker) handleAlterUserScramCredentials(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	byUser := map[string][]scramAlteration{}
	add := func(name string, a scramAlteration) {
		if _, ok := byUser[name]; !ok {
			order = append(order, name)
		}
		byUser[name] = append(byUser[name], a)
	}
	for _, d := range req.Deletions {
		add(d.Name, scramAlteration{mech: authn.MechanismName(d.Mechanism), mechByte: d.Mechanism, deletion: true})
	}
	for _, u := range req.Upsertions {
		add(u.Name, scramAlteration{mech: authn.MechanismName(u.Mechanism), mechByte: u.Mechanism, iterations: u.Iterations, salt: u.Salt, salted: u.SaltedPassword})
	}
	ctx, cancel := context.WithTimeout(r.ctx, userAlterTimeout)
	defer cancel()
	for _, name := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = name
		res.ErrorCode, res.ErrorMessage = b.alterUser(ctx, name, byUser[name])
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func (b *Broker) alterUser(ctx context.Context, name string, alts []scramAlteration) (int16, *string) {
	fail := func(e *kerr.Error, msg string) (int16, *string) { return e.Code, kmsg.StringPtr(msg) }
	if name == "" {
		return fail(kerr.UnacceptableCredential, "Username must not be empty")
	}
	for i, a := range alts {
		// Kafka's controller keys a request's alterations by user name: a
		// second one for the same user, whatever its mechanism, fails the
		// user (measured on Kafka 4.4 by make conformance).
		if i > 0 {
			return fail(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
		if a.mech == "" {
			return fail(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		}
		if a.deletion {
			continue
		}
		switch {
		case a.iterations < authn.MinScramIterations:
			return fail(kerr.UnacceptableCredential, "Too few iterations")
		case a.iterations > authn.MaxScramIterations:
			return fail(kerr.UnacceptableCredential, "Too many iterations")
		case len(a.salt) == 0:
			return fail(kerr.UnacceptableCredential, "Salt must not be empty")
		case len(a.salted) == 0:
			return fail(kerr.UnacceptableCredential, "Salted password must not be empty")
		}
	}
	// Conditioned on the user as read: a concurrent change through
	// another broker is applied to, not overwritten.
	var missing bool
	err := b.users.Modify(ctx, name, func(u *authn.User) error {
		missing = false
		for _, a := range alts {
			if a.deletion {
				if _, ok := u.Scram[a.mech]; !ok {
					missing = true
					return errConfigRejected
				}
				delete(u.Scram, a.mech)
				continue
			}
			u.Scram[a.mech] = authn.CredentialFromSalted(a.mech, a.salt, a.salted, int(a.iterations))
		}
		return nil
	})
	if missing {
		return fail(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
	}
	if err != nil {
		return fail(kerr.UnknownServerError, err.Error())
	}
	b.log.Info("SCRAM credentials altered", "user", name)
	return 0, nil
}
