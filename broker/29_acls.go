package broker

// DescribeAcls (29): v0-3. CreateAcls (30): v0-3. DeleteAcls (31): v0-3.
//
// The ACL bindings of the authorizer (acl.go). With no authorizer every
// answer is SECURITY_DISABLED. Creating and deleting need ALTER on the
// CLUSTER, describing DESCRIBE, else CLUSTER_AUTHORIZATION_FAILED. Before v1
// there are no pattern types: bindings are LITERAL and filters LITERAL.
// A binding Kafka would reject (an unknown or ANY code, an empty name, a
// CLUSTER resource not named kafka-cluster, a principal without a type) is
// INVALID_REQUEST with Kafka's message, each creation on its own; filters
// with unknown codes are INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeACLs, 0, 3, (*Broker).handleDescribeACLs)
	register(kmsg.CreateACLs, 0, 3, (*Broker).handleCreateACLs)
	register(kmsg.DeleteACLs, 0, 3, (*Broker).handleDeleteACLs)
}

// v0PatternType is the pattern type of requests before v1.
func v0PatternType(version int16, p kmsg.ACLResourcePatternType) int8 {
	if version == 0 || p == 0 {
		return patLiteral
	}
	return int8(p)
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
	if !b.aclEnabled() {
		return fail(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowed(r, opDescribe, resCluster, clusterResourceName) {
		return fail(kerr.ClusterAuthorizationFailed, "")
	}
	f := aclFilter{resourceType: int8(req.ResourceType), name: req.ResourceName, patternType: v0PatternType(req.Version, req.ResourcePatternType),
		principal: req.Principal, host: req.Host, operation: int8(req.Operation), permission: int8(req.PermissionType)}
	if msg := f.validate(); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	type resKey struct {
		typ, pat int8
		name     string
	}
	idx := map[resKey]int{}
	for _, a := range b.aclBindings() {
		if !f.matches(&a) {
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
	if !b.aclEnabled() {
		return all(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowed(r, opAlter, resCluster, clusterResourceName) {
		return all(kerr.ClusterAuthorizationFailed, "")
	}
	var add []aclBinding
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	var ok []int
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		a := aclBinding{ResourceType: int8(c.ResourceType), ResourceName: c.ResourceName, PatternType: v0PatternType(req.Version, c.ResourcePatternType),
			Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), Permission: int8(c.PermissionType)}
		if msg := a.validate(); msg != "" {
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
	b.acl.alterMu.Lock()
	defer b.acl.alterMu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, aclTimeout)
	defer cancel()
	if err := b.updateACLs(ctx, add, nil); err != nil {
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
	if !b.aclEnabled() {
		return all(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowed(r, opAlter, resCluster, clusterResourceName) {
		return all(kerr.ClusterAuthorizationFailed, "")
	}
	b.acl.alterMu.Lock()
	defer b.acl.alterMu.Unlock()
	cur := b.aclBindings()
	var del []aclBinding
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i, fr := range req.Filters {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		f := aclFilter{resourceType: int8(fr.ResourceType), name: fr.ResourceName, patternType: v0PatternType(req.Version, fr.ResourcePatternType),
			principal: fr.Principal, host: fr.Host, operation: int8(fr.Operation), permission: int8(fr.PermissionType)}
		if msg := f.validate(); msg != "" {
			resp.Results[i].ErrorCode = kerr.InvalidRequest.Code
			resp.Results[i].ErrorMessage = kmsg.StringPtr(msg)
			continue
		}
		for _, a := range cur {
			if !f.matches(&a) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			del = append(del, a)
		}
	}
	if len(del) == 0 {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, aclTimeout)
	defer cancel()
	if err := b.updateACLs(ctx, nil, del); err != nil {
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
