package broker

// AlterConfigs: v0-2
//
// The legacy form: a topic's overrides are replaced by exactly the configs
// given (so configs not named return to their defaults). Each name and
// value is validated (INVALID_CONFIG), the result is persisted and applied
// to the topic's partitions at once. A BROKER resource's dynamic configs
// (dynconfig.go) are likewise replaced by those given.

import (
	"maps"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterConfigs, 0, 2, (*Broker).handleAlterConfigs) }

func (b *Broker) handleAlterConfigs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[[2]string]int{}
	for _, rr := range req.Resources {
		seen[[2]string{rr.ResourceType.String(), rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if rr.ResourceType == kmsg.ConfigResourceTypeBroker && seen[[2]string{rr.ResourceType.String(), rr.ResourceName}] == 1 {
			if e, msg := b.legacyAlterBrokerConfigs(rr, req.ValidateOnly); e != nil {
				sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		e, msg := b.alterConfigs(rr.ResourceType, rr.ResourceName, seen[[2]string{rr.ResourceType.String(), rr.ResourceName}] > 1, req.ValidateOnly,
			func(map[string]string) (map[string]string, *kerr.Error, string) {
				next := map[string]string{}
				for _, c := range rr.Configs {
					if c.Value == nil {
						continue
					}
					if _, dup := next[c.Name]; dup {
						return nil, kerr.InvalidRequest, "Error due to duplicate config keys"
					}
					if err := config.ValidateTopic(c.Name, *c.Value); err != nil {
						return nil, kerr.InvalidConfig, err.Error()
					}
					next[c.Name] = *c.Value
				}
				return next, nil, ""
			})
		if e != nil {
			sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// legacyAlterBrokerConfigs replaces a BROKER resource's dynamic configs by
// those given; a null value is INVALID_REQUEST, as in Kafka.
func (b *Broker) legacyAlterBrokerConfigs(rr kmsg.AlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	next := map[string]string{}
	var nulls []string
	for _, c := range rr.Configs {
		if _, dup := next[c.Name]; dup || slices.Contains(nulls, c.Name) {
			return kerr.InvalidRequest, "Error due to duplicate config keys"
		}
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		next[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	return b.alterBrokerConfigs(rr.ResourceName, validateOnly, func(map[string]string) (map[string]string, *errBrokerConfig) {
		return next, nil
	})
}

// alterConfigs applies change to a topic's overrides: shared by AlterConfigs
// and IncrementalAlterConfigs.
func (b *Broker) alterConfigs(typ kmsg.ConfigResourceType, name string, duplicate, validateOnly bool,
	change func(current map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	if duplicate {
		return kerr.InvalidRequest, "Error due to duplicate resources in the request"
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	default:
		return kerr.InvalidRequest, "Unsupported resource type " + typ.String()
	}
	if err := validateTopicName(name); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	t := b.lookupTopic(name)
	if t == nil {
		return kerr.UnknownTopicOrPartition, "Topic '" + name + "' does not exist."
	}
	if b.cluster != nil && !validateOnly {
		return b.clusterAlterConfigs(t, change)
	}
	current, _ := b.topicSnapshot(t)
	next, e, msg := change(maps.Clone(current))
	if e != nil || validateOnly {
		return e, msg
	}
	if err := b.setTopicConfigs(t, next); err != nil {
		b.log.Error("alter topic configs", "topic", name, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}
