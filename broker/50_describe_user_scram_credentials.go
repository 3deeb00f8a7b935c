package broker

// DescribeUserScramCredentials: v0 (flexible). Null users describes every
// user; a user asked for twice is DUPLICATE_RESOURCE, an unknown one
// RESOURCE_NOT_FOUND, with Kafka's messages. With the authorizer it
// needs DESCRIBE on the cluster (acl_apis.go).

import (
	"sort"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, (*Broker).handleDescribeUserScramCredentials)
}

func (b *Broker) handleDescribeUserScramCredentials(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	describe := func(name string, rec *authn.User) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		for _, mech := range []string{config.ScramSHA256, config.ScramSHA512} {
			if c, ok := rec.Scram[mech]; ok {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = authn.MechanismByte(mech), int32(c.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		return res
	}
	if len(req.Users) == 0 { // null or empty: every user, as Kafka answers (the Java client sends an empty list)
		all, err := b.users.All()
		if err != nil {
			resp.ErrorCode = kerr.UnknownServerError.Code
			resp.ErrorMessage = kmsg.StringPtr(err.Error())
			return resp, nil
		}
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			resp.Results = append(resp.Results, describe(n, all[n]))
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u.Name
		if count[u.Name] > 1 {
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
			resp.Results = append(resp.Results, res)
			continue
		}
		rec, err := b.users.User(u.Name)
		switch {
		case err != nil:
			res.ErrorCode = kerr.UnknownServerError.Code
			res.ErrorMessage = kmsg.StringPtr(err.Error())
		case rec == nil || len(rec.Scram) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u.Name)
		default:
			res = describe(u.Name, rec)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
