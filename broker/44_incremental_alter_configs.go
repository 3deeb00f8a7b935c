package broker

// IncrementalAlterConfigs: v0-1
//
// SET and DELETE change one topic override each; APPEND and SUBTRACT edit
// list configs (cleanup.policy, the throttled-replica lists) and are
// INVALID_CONFIG on other types. A name given twice for one resource, or a
// resource given twice, is INVALID_REQUEST. Validated, persisted and
// applied live, like AlterConfigs. BROKER resources: the dynamic broker
// configs (dynconfig.go). CLIENT_METRICS resources: KIP-714 subscriptions
// (clientmetrics.go).

import (
	"maps"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, (*Broker).handleIncrementalAlterConfigs) }

func (b *Broker) handleIncrementalAlterConfigs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[[2]string]int{}
	for _, rr := range req.Resources {
		seen[[2]string{rr.ResourceType.String(), rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if rr.ResourceType == kmsg.ConfigResourceTypeBroker && seen[[2]string{rr.ResourceType.String(), rr.ResourceName}] == 1 {
			if e, msg := b.incrementalAlterBrokerConfigs(rr, req.ValidateOnly); e != nil {
				sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if rr.ResourceType == kmsg.ConfigResourceTypeClientMetrics {
			if seen[[2]string{rr.ResourceType.String(), rr.ResourceName}] > 1 {
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Error due to duplicate resources in the request")
			} else if e, msg := b.alterClientMetrics(rr, req.ValidateOnly); e != nil {
				sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			if seen[[2]string{rr.ResourceType.String(), rr.ResourceName}] > 1 {
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Error due to duplicate resources in the request")
			} else if e, msg := b.alterGroupConfigs(rr, req.ValidateOnly); e != nil {
				sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		e, msg := b.alterConfigs(rr.ResourceType, rr.ResourceName, seen[[2]string{rr.ResourceType.String(), rr.ResourceName}] > 1, req.ValidateOnly,
			func(cur map[string]string) (map[string]string, *kerr.Error, string) {
				if cur == nil {
					cur = map[string]string{}
				}
				names := map[string]bool{}
				for _, c := range rr.Configs {
					if names[c.Name] {
						return nil, kerr.InvalidRequest, "Error due to duplicate config keys"
					}
					names[c.Name] = true
					d := config.Topic(c.Name)
					if d == nil {
						return nil, kerr.InvalidConfig, "Unknown topic config name: " + c.Name
					}
					switch c.Op {
					case kmsg.IncrementalAlterConfigOpSet:
						if c.Value == nil {
							return nil, kerr.InvalidRequest, "Null value not supported for SET of " + c.Name
						}
						cur[c.Name] = *c.Value
					case kmsg.IncrementalAlterConfigOpDelete:
						delete(cur, c.Name)
					case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
						if d.Type != kmsg.ConfigTypeList {
							return nil, kerr.InvalidConfig, "Config value append/subtract is not allowed for config key " + c.Name + ", which is not a list"
						}
						v, _ := b.topicConfigValue(cur, c.Name)
						list := config.SplitList(v)
						var edits []string
						if c.Value != nil {
							edits = config.SplitList(*c.Value)
						}
						for _, e := range edits {
							if c.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(list, e) {
								list = append(list, e)
							} else if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
								list = slices.DeleteFunc(list, func(x string) bool { return x == e })
							}
						}
						cur[c.Name] = strings.Join(list, ",")
					default:
						return nil, kerr.InvalidRequest, "Unknown operation " + c.Op.String()
					}
					if v, ok := cur[c.Name]; ok {
						if err := config.ValidateTopic(c.Name, v); err != nil {
							return nil, kerr.InvalidConfig, err.Error()
						}
					}
				}
				return cur, nil, ""
			})
		if e != nil {
			sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// incrementalAlterBrokerConfigs applies SET, DELETE, APPEND and SUBTRACT
// to a BROKER resource's dynamic configs (dynconfig.go), with Kafka's
// checks and messages (ConfigAdminManager.prepareIncrementalConfigs).
func (b *Broker) incrementalAlterBrokerConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	names := map[string]bool{}
	var nulls []string
	for _, c := range rr.Configs {
		if names[c.Name] {
			return kerr.InvalidRequest, "Error due to duplicate config keys"
		}
		names[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	return b.alterBrokerConfigs(rr.ResourceName, validateOnly, func(cur map[string]string) (map[string]string, *errBrokerConfig) {
		for _, c := range rr.Configs {
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				cur[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, c.Name)
			case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
				d := config.Broker(c.Name)
				if d == nil {
					return nil, &errBrokerConfig{kerr.InvalidConfig, "Unknown config name: " + c.Name}
				}
				op := "append"
				if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					op = "subtract"
				}
				if d.Type != kmsg.ConfigTypeList {
					return nil, &errBrokerConfig{kerr.InvalidConfig, "Config value " + op + " is not allowed for config key: " + c.Name}
				}
				old, ok := cur[c.Name]
				if !ok {
					old = d.Default
				}
				list := config.SplitList(old)
				for _, e := range strings.Split(*c.Value, ",") {
					if c.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(list, e) {
						list = append(list, e)
					} else if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
						list = slices.DeleteFunc(list, func(x string) bool { return x == e })
					}
				}
				cur[c.Name] = strings.Join(list, ",")
			default:
				return nil, invalidBrokerConfig("Unknown operations type %d", c.Op)
			}
		}
		return cur, nil
	})
}

// alterGroupConfigs applies SET and DELETE to a group's share configs,
// stored cluster-wide and durably (groupconfigs.go).
func (b *Broker) alterGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	if rr.ResourceName == "" {
		return kerr.InvalidGroupID, "Group id must not be empty."
	}
	change := func(cur map[string]string) (map[string]string, *kerr.Error, string) {
		names := map[string]bool{}
		for _, c := range rr.Configs {
			if names[c.Name] {
				return nil, kerr.InvalidRequest, "Error due to duplicate config keys"
			}
			names[c.Name] = true
			d := config.Group(c.Name)
			if d == nil {
				return nil, kerr.InvalidConfig, "Unknown group config name: " + c.Name
			}
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if c.Value == nil {
					return nil, kerr.InvalidRequest, "Null value not supported for SET of " + c.Name
				}
				if err := config.ValidateGroup(d, *c.Value); err != nil {
					return nil, kerr.InvalidConfig, err.Error()
				}
				cur[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, c.Name)
			default:
				return nil, kerr.InvalidConfig, "Config value append/subtract is not allowed for config key " + c.Name
			}
		}
		if err := config.ValidateGroupValues(cur, b.cfg.int64Prop); err != nil {
			return nil, kerr.InvalidConfig, err.Error()
		}
		return cur, nil, ""
	}
	if validateOnly {
		cur := maps.Clone(b.groupConfigs.of(rr.ResourceName))
		if cur == nil {
			cur = map[string]string{}
		}
		_, e, msg := change(cur)
		return e, msg
	}
	return b.updateGroupConfigs(rr.ResourceName, change)
}
