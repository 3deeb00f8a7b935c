package broker

// DescribeConfigs: v1-4 (v0 was removed in Kafka 4)
//
// Topics: every topic config with its effective value and source — the
// topic's override (DYNAMIC_TOPIC_CONFIG), a broker property
// (STATIC_BROKER_CONFIG) or Kafka's default (DEFAULT_CONFIG) — with
// synonyms (v1+), types and documentation (v3+); a topic default set as a
// dynamic broker config is DYNAMIC_BROKER_CONFIG or
// DYNAMIC_DEFAULT_BROKER_CONFIG. Brokers: resource name "" lists the
// cluster-wide dynamic defaults set, this broker's node id every broker
// config with its source (dynconfig.go), read-only unless it (or a synonym,
// as log.retention.hours for log.retention.ms) is dynamic. Unknown topics are
// UNKNOWN_TOPIC_OR_PARTITION; another node id, or a resource type Gregor
// does not serve, INVALID_REQUEST. Groups: the share group configs
// (groupconfigs.go), the group's own values or the broker defaults. Client
// metrics: a KIP-714 subscription's configs (clientmetrics.go).

import (
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeConfigs, 1, 4, (*Broker).handleDescribeConfigs) }

func (b *Broker) handleDescribeConfigs(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		want := func(name string) bool { return rr.ConfigNames == nil || slices.Contains(rr.ConfigNames, name) }
		fail := func(e *kerr.Error, msg string) {
			sr.ErrorCode, sr.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if err := validateTopicName(rr.ResourceName); err != nil {
				fail(kerr.InvalidTopicException, err.Error())
				break
			}
			t := b.lookupTopic(rr.ResourceName)
			if t == nil {
				fail(kerr.UnknownTopicOrPartition, "Topic '"+rr.ResourceName+"' does not exist.")
				break
			}
			overrides, _ := b.topicSnapshot(t)
			for _, d := range config.TopicDefs {
				if want(d.Name) {
					sr.Configs = append(sr.Configs, b.describeTopicConfig(req, overrides, &d))
				}
			}
			for _, d := range config.ConfluentTopicDefs {
				if _, set := overrides[d.Name]; set && want(d.Name) {
					sr.Configs = append(sr.Configs, b.describeTopicConfig(req, overrides, &d))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			switch rr.ResourceName {
			case "":
				sr.Configs = b.describeDynamicDefaults(req, want)
			case strconv.Itoa(int(b.nodeID)):
				for _, d := range config.BrokerDefs {
					if want(d.Name) {
						sr.Configs = append(sr.Configs, b.describeBrokerConfig(req, &d))
					}
				}
			default:
				fail(kerr.InvalidRequest, "Unexpected broker id, expected "+strconv.Itoa(int(b.nodeID))+" or empty string, but received "+rr.ResourceName)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			// Share group configs (groupconfigs.go), for any group id.
			if rr.ResourceName == "" {
				fail(kerr.InvalidGroupID, "Group id must not be empty.")
				break
			}
			for _, d := range config.GroupDefs {
				if !want(d.Name) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				v, set := b.groupConfigValue(rr.ResourceName, d.Name)
				syns := b.groupConfigSynonyms(&d)
				c.Name, c.Value, c.Source = d.Name, kmsg.StringPtr(v), syns[0].Source
				if set {
					c.Source = kmsg.ConfigSourceGroupConfig
					syns = append([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{config.Synonym(d.Name, v, kmsg.ConfigSourceGroupConfig)}, syns...)
				}
				c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
				if req.IncludeSynonyms {
					c.ConfigSynonyms = syns
				}
				switch {
				case d.Bool:
					c.ConfigType = kmsg.ConfigTypeBoolean
				case d.Enum != nil:
					c.ConfigType = kmsg.ConfigTypeString
				default:
					c.ConfigType = kmsg.ConfigTypeInt
				}
				if req.IncludeDocumentation {
					c.Documentation = kmsg.StringPtr(d.Doc)
				}
				sr.Configs = append(sr.Configs, c)
			}
		case kmsg.ConfigResourceTypeClientMetrics:
			// KIP-714 subscriptions (clientmetrics.go), for any name.
			sr.Configs = b.describeClientMetricsConfigs(req, rr.ResourceName, want)
		default:
			fail(kerr.InvalidRequest, "Unsupported resource type "+rr.ResourceType.String())
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// groupConfigSynonyms are the synonyms of a group config below the group's
// own setting, as Kafka 4.4 lists them: the broker property that supplies
// its default (dynamic, static, default), or the config's own default
// when no broker property does (share.auto.offset.reset).
func (b *Broker) groupConfigSynonyms(d *config.GroupDef) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	if d.BrokerProp != "" {
		if list := b.synonymChain([]string{d.BrokerProp}, true); len(list) > 0 {
			return list
		}
	}
	return []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{config.Synonym(d.Name, d.Default, kmsg.ConfigSourceDefaultConfig)}
}

func (b *Broker) describeTopicConfig(req *kmsg.DescribeConfigsRequest, overrides map[string]string, d *config.Def) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v, src := b.topicConfigValue(overrides, d.Name)
	c.Name, c.Value, c.Source = d.Name, kmsg.StringPtr(v), src
	c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
	c.ConfigType = d.Type
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr(d.Doc)
	}
	if req.IncludeSynonyms {
		if ov, ok := overrides[d.Name]; ok {
			c.ConfigSynonyms = append(c.ConfigSynonyms, config.Synonym(d.Name, ov, kmsg.ConfigSourceDynamicTopicConfig))
		}
		// The broker properties Kafka maps the topic config to
		// (ServerTopicConfigSynonyms): the dynamic ones, from the first
		// setting of the property itself (ConfigHelper.configSynonyms'
		// dropWhile): with log.retention.ms set nowhere, retention.ms
		// lists no log.retention.hours=168, as in Kafka 4.4.
		if dynamicBrokerConfigs[d.Synonym] {
			c.ConfigSynonyms = append(c.ConfigSynonyms, dropUntil(b.synonymChain(brokerSynonyms(d.Synonym), true), d.Synonym)...)
		}
	}
	return c
}

func (b *Broker) describeBrokerConfig(req *kmsg.DescribeConfigsRequest, d *config.Def) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v, src := b.brokerValue(d.Name)
	switch d.Name {
	case "log.dirs", "log.dir":
		v, src = b.cfg.DataDir, kmsg.ConfigSourceStaticBrokerConfig
	case "listeners":
		v, src = b.listenersValue(), kmsg.ConfigSourceStaticBrokerConfig
	case "advertised.listeners":
		v, src = b.advertisedListenersValue(), kmsg.ConfigSourceStaticBrokerConfig
	}
	if d.Type == kmsg.ConfigTypePassword && v != "" {
		c.IsSensitive, v = true, "" // never reveal keys and passwords
	}
	c.Name, c.Source, c.ReadOnly, c.ConfigType = d.Name, src, !anyDynamic(brokerSynonyms(d.Name)), d.Type
	if v != "" {
		c.Value = kmsg.StringPtr(v)
	}
	c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr(d.Doc)
	}
	if req.IncludeSynonyms && c.Value != nil {
		if c.ReadOnly {
			c.ConfigSynonyms = append(c.ConfigSynonyms, config.Synonym(d.Name, v, src))
		} else {
			c.ConfigSynonyms = dropUntil(b.synonymChain(brokerSynonyms(d.Name), true), d.Name)
		}
	}
	return c
}
