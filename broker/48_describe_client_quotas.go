package broker

// DescribeClientQuotas: v0-1 (v1 flexible). KIP-546.
//
// A filter is a list of components, one per entity type (user, client-id,
// ip): match type 0 (exact) matches the named entity, 1 (default) the
// type's default entity, 2 (any) any entity of the type, default included.
// An entity matches when every component matches it; with strict it must
// also have no other entity type. Errors are the request's, with Kafka's
// messages: an empty or repeated entity type, a match string with match
// types 1 and 2 or none with 0, or ip combined with user or client-id are
// INVALID_REQUEST; an unknown entity type is UNSUPPORTED_VERSION and an
// unknown match type INVALID_REQUEST. DESCRIBE_CONFIGS on CLUSTER is
// required (CLUSTER_AUTHORIZATION_FAILED).

import (
	"sort"

	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeClientQuotas, 0, 1, (*Broker).handleDescribeClientQuotas)
}

func (b *Broker) handleDescribeClientQuotas(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = e.Code, kmsg.StringPtr(msg), nil
		return resp, nil
	}
	if !b.allowed(r, acl.DescribeConfigs, acl.Cluster, acl.ClusterName) {
		return fail(kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description)
	}
	exact := map[string]*string{}
	anyOf := map[string]bool{}
	for _, c := range req.Components {
		if c.EntityType == "" {
			return fail(kerr.InvalidRequest, "Invalid empty entity type.")
		}
		if _, dup := exact[c.EntityType]; dup || anyOf[c.EntityType] {
			return fail(kerr.InvalidRequest, "Entity type "+c.EntityType+" cannot appear more than once in the filter.")
		}
		switch c.EntityType {
		case quota.User, quota.ClientID, quota.IP:
		default:
			return fail(kerr.UnsupportedVersion, "Unsupported entity type "+c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			anyOf[c.EntityType] = true
		default:
			return fail(kerr.InvalidRequest, "Unsupported match type "+c.MatchType.String())
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || anyOf[t] }
	if has(quota.IP) && (has(quota.User) || has(quota.ClientID)) {
		return fail(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	recs := b.quotas.Records()
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, id := range ids {
		q := recs[id]
		if !quotaFilterMatches(q.Entity, exact, anyOf, req.Strict) {
			continue
		}
		resp.Entries = append(resp.Entries, describeQuotaEntry(q))
	}
	return resp, nil
}

func quotaFilterMatches(e quota.Entity, exact map[string]*string, anyOf map[string]bool, strict bool) bool {
	if strict && len(e) != len(exact)+len(anyOf) {
		return false
	}
	for t, want := range exact {
		got, ok := e[t]
		if !ok || (got == nil) != (want == nil) || got != nil && *got != *want {
			return false
		}
	}
	for t := range anyOf {
		if _, ok := e[t]; !ok {
			return false
		}
	}
	return true
}

func describeQuotaEntry(q quota.Record) kmsg.DescribeClientQuotasResponseEntry {
	en := kmsg.NewDescribeClientQuotasResponseEntry()
	for _, t := range []string{quota.User, quota.ClientID, quota.IP} {
		if n, ok := q.Entity[t]; ok {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = t, n
			en.Entity = append(en.Entity, ee)
		}
	}
	keys := make([]string, 0, len(q.Values))
	for k := range q.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kmsg.NewDescribeClientQuotasResponseEntryValue()
		v.Key, v.Value = k, q.Values[k]
		en.Values = append(en.Values, v)
	}
	return en
}
