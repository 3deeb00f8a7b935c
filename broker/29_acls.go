package broker

// DescribeAcls (29): v0-3. CreateAcls (30): v0-3. DeleteAcls (31): v0-3.
//
// The ACL bindings of the authorizer (package security/acl). With no authorizer every
// answer is SECURITY_DISABLED. Creating and deleting need ALTER on the
// CLUSTER, describing DESCRIBE, else CLUSTER_AUTHORIZATION_FAILED. Before v1
// there are no pattern types: bindings are LITERAL and filters LITERAL.
// A binding Kafka would reject (an unknown or ANY code, an empty name, a
// CLUSTER resource not named kafka-cluster, a principal without a type) is
// INVALID_REQUEST with Kafka's message, each creation on its own; filters
// with unknown codes are INVALID_REQUEST.

import (
	"context"

	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeACLs, 0, 3, (*Broker).handleDescribeACLs)
	register(kmsg.CreateACLs, 0, 3, (*Broker).handleCreateACLs)
	register(kmsg.DeleteACLs, 0, 3, (*Broker).handleDeleteACLs)
}

// v0PatternType is the pattern type of requests before v1.
func v0PatternType(version int16, p kmsg.ACLResourcePatternType) acl.PatternType {
	if version == 0 || p == 0 {
		return acl.Literal
	}
	return acl.PatternType(p)
}

// aclFilter is a DescribeAcls or DeleteAcls filter as the authorizer takes
// it.
func aclFilter(version int16, typ kmsg.ACLResourceType, name *string, pat kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	return acl.Filter{ResourceType: acl.ResourceType(typ), Name: name, PatternType: v0PatternType(version, pat),
		Principal: principal, Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)}
}

func (b *Broker) handleDescribeACLs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp, nil
	}
	if !b.acl.Enabled() {
		return fail(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowed(r, acl.Describe, acl.Cluster, acl.ClusterName) {
		return fail(kerr.ClusterAuthorizationFailed, "")
	}
	f := aclFilter(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if msg := f.Validate(); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	type resKey struct {
		typ  acl.ResourceType
		pat  acl.PatternType
		name string
	}
	idx := map[resKey]int{}
	for _, a := range b.acl.Bindings() {
		if !f.Matches(&a) {
			continue
		}
		k := resKey{a.ResourceType, a.PatternType, a.ResourceName}
		i, ok := idx[k]
		if !ok {
			rr := kmsg.NewDescribeACLsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			i = len(resp.Resources)
			idx[k] = i
			resp.Resources = append(resp.Resources, rr)
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host, ra.Operation, ra.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, ra)
	}
	return resp, nil
}

func (b *Broker) handleCreateACLs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	all := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		for range req.Creations {
			rr := kmsg.NewCreateACLsResponseResult()
			rr.ErrorCode = e.Code
			if msg != "" {
				rr.ErrorMessage = kmsg.StringPtr(msg)
			}
			resp.Results = append(resp.Results, rr)
		}
		return resp, nil
	}
	if !b.acl.Enabled() {
		return all(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowed(r, acl.Alter, acl.Cluster, acl.ClusterName) {
		return all(kerr.ClusterAuthorizationFailed, "")
	}
	var add []acl.Binding
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	var ok []int
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		a := acl.Binding{ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName, PatternType: v0PatternType(req.Version, c.ResourcePatternType),
			Principal: c.Principal, Host: c.Host, Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)}
		if msg := a.Validate(); msg != "" {
			resp.Results[i].ErrorCode = kerr.InvalidRequest.Code
			resp.Results[i].ErrorMessage = kmsg.StringPtr(msg)
			continue
		}
		add = append(add, a)
		ok = append(ok, i)
	}
	if len(add) == 0 {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, aclTimeout)
	defer cancel()
	if err := b.acl.Alter(ctx, func([]acl.Binding) (_, _ []acl.Binding) { return add, nil }); err != nil {
		b.log.Error("CreateAcls", "err", err)
		for _, i := range ok {
			resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
			resp.Results[i].ErrorMessage = kmsg.StringPtr(err.Error())
		}
	}
	return resp, nil
}

func (b *Broker) handleDeleteACLs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	all := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		for range req.Filters {
			rr := kmsg.NewDeleteACLsResponseResult()
			rr.ErrorCode = e.Code
			if msg != "" {
				rr.ErrorMessage = kmsg.StringPtr(msg)
			}
			resp.Results = append(resp.Results, rr)
		}
		return resp, nil
	}
	if !b.acl.Enabled() {
		return all(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowed(r, acl.Alter, acl.Cluster, acl.ClusterName) {
		return all(kerr.ClusterAuthorizationFailed, "")
	}
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	ctx, cancel := context.WithTimeout(r.ctx, aclTimeout)
	defer cancel()
	err := b.acl.Alter(ctx, func(cur []acl.Binding) (_, del []acl.Binding) {
		for i, fr := range req.Filters {
			resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
			f := aclFilter(req.Version, fr.ResourceType, fr.ResourceName, fr.ResourcePatternType, fr.Principal, fr.Host, fr.Operation, fr.PermissionType)
			if msg := f.Validate(); msg != "" {
				resp.Results[i].ErrorCode = kerr.InvalidRequest.Code
				resp.Results[i].ErrorMessage = kmsg.StringPtr(msg)
				continue
			}
			for _, a := range cur {
				if !f.Matches(&a) {
					continue
				}
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
				resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
				del = append(del, a)
			}
		}
		return nil, del
	})
	if err != nil {
		b.log.Error("DeleteAcls", "err", err)
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 {
				resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
				resp.Results[i].ErrorMessage = kmsg.StringPtr(err.Error())
				resp.Results[i].MatchingACLs = nil
			}
		}
	}
	return resp, nil
}
