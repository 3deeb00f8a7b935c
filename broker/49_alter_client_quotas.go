package broker

// AlterClientQuotas: v0-1 (v1 flexible). KIP-546.
//
// Each entry names an entity (user, client-id, (user, client-id) or ip; a
// null name is the type's default entity) and sets or removes quota keys.
// An entry is applied whole or not at all, and answered in request order
// with INVALID_REQUEST and Kafka's message when its entity is empty, has a
// repeated or unknown type, an empty name, combines ip with the others, or
// names an ip that is not an IP; when a key is unknown for the entity,
// repeated, or set to a value that is not positive (or not integral, or out
// of range, for the byte and connection rates). The same entity twice in
// one request is INVALID_REQUEST for the second. validate_only checks
// without storing. ALTER_CONFIGS on CLUSTER is required
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"maps"

	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AlterClientQuotas, 0, 1, (*Broker).handleAlterClientQuotas)
}

func (b *Broker) handleAlterClientQuotas(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	resp.Entries = make([]kmsg.AlterClientQuotasResponseEntry, len(req.Entries))
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = ent.Type, ent.Name
			re.Entity = append(re.Entity, ee)
		}
		resp.Entries[i] = re
	}
	setErr := func(i int, e *kerr.Error, msg string) {
		resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = e.Code, kmsg.StringPtr(msg)
	}
	if !b.allowed(r, acl.AlterConfigs, acl.Cluster, acl.ClusterName) {
		for i := range resp.Entries {
			setErr(i, kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description)
		}
		return resp, nil
	}
	var changed map[string]quota.Record
	var changedBy []int // entries whose change is in changed
	ctx, cancel := context.WithTimeout(r.ctx, quotaTimeout)
	defer cancel()
	err := b.quotas.Alter(ctx, func(cur map[string]quota.Record) map[string]quota.Record {
		changed = map[string]quota.Record{}
		seen := map[string]bool{}
		for i, e := range req.Entries {
			ent := quota.Entity{}
			types := make([]string, 0, len(e.Entity))
			for _, x := range e.Entity {
				types = append(types, x.Type)
				ent[x.Type] = x.Name
			}
			keys, msg := quota.ValidateEntity(types, ent)
			if msg != "" {
				setErr(i, kerr.InvalidRequest, msg)
				continue
			}
			id := ent.ID()
			if seen[id] {
				setErr(i, kerr.InvalidRequest, "Ignoring duplicate entity "+id)
				continue
			}
			seen[id] = true
			next := maps.Clone(cur[id].Values)
			if next == nil {
				next = map[string]float64{}
			}
			opKeys := map[string]bool{}
			for _, op := range e.Ops {
				if opKeys[op.Key] {
					msg = "Duplicate quota key " + op.Key + " not updating quota for this entity"
					break
				}
				opKeys[op.Key] = true
				if op.Remove { // any key, as Kafka's controller: nothing to remove is no error
					delete(next, op.Key)
					continue
				}
				if msg = quota.ValidateValue(keys, op.Key, op.Value); msg != "" {
					break
				}
				next[op.Key] = op.Value
			}
			if msg != "" {
				setErr(i, kerr.InvalidRequest, msg)
				continue
			}
			if maps.Equal(next, cur[id].Values) || len(next) == 0 && len(cur[id].Values) == 0 {
				continue
			}
			changed[id] = quota.Record{Entity: ent, Values: next}
			changedBy = append(changedBy, i)
		}
		if req.ValidateOnly {
			return nil
		}
		return changed
	})
	if err != nil {
		b.log.Error("storing client quotas", "err", err)
		if changed == nil { // no store yet: nothing was even validated
			changedBy = changedBy[:0]
			for i := range resp.Entries {
				changedBy = append(changedBy, i)
			}
		}
		for _, i := range changedBy {
			setErr(i, kerr.UnknownServerError, err.Error())
		}
		return resp, nil
	}
	if req.ValidateOnly {
		return resp, nil
	}
	for id, q := range changed {
		b.log.Info("client quotas altered", "entity", id, "quotas", q.Values)
	}
	return resp, nil
}
