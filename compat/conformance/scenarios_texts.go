package conformance

// Scenarios that compare the texts operators grep for (issue #28): error
// messages, which normalisation otherwise drops, are kept here by
// returning them under keys of their own, and synonym lists as Kafka's
// tools print them.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// text is an error's code and message, compared as they are.
func text(code int16, msg *string) map[string]any {
	return map[string]any{"code": errName(code), "message": msg}
}

// textScenarios are the scenarios of this file, in report order.
func textScenarios() []Scenario {
	return []Scenario{
		{"CreatePartitions", "fewer and as many partitions: messages", func(e *Env) any {
			e.CreateTopic("cpt", 5)
			fewer := createPartitions(e, "cpt", 3).Topics[0]
			same := createPartitions(e, "cpt", 5).Topics[0]
			return map[string]any{"fewer": text(fewer.ErrorCode, fewer.ErrorMessage), "same": text(same.ErrorCode, same.ErrorMessage)}
		}},
		{"AlterConfigs", "retention.ms=abc: messages of AlterConfigs, IncrementalAlterConfigs and CreateTopics", func(e *Env) any {
			e.CreateTopic("cfg-abc", 1)
			a := alterConfigs(e, "cfg-abc", "retention.ms", "abc").Resources[0]
			i := incAlter(e, "cfg-abc", "retention.ms", "abc", 0).Resources[0]
			low := incAlter(e, "cfg-abc", "retention.ms", "-5", 0).Resources[0]
			c := Do[*kmsg.CreateTopicsResponse](e, createTopicsReq("cfg-abc-new", 1, 1, "retention.ms", "abc")).Topics[0]
			return map[string]any{"alter": text(a.ErrorCode, a.ErrorMessage), "incremental": text(i.ErrorCode, i.ErrorMessage),
				"incrementalBelowMin": text(low.ErrorCode, low.ErrorMessage), "create": text(c.ErrorCode, c.ErrorMessage)}
		}},
		{"IncrementalAlterConfigs", "broker: configs that are not dynamic: messages", func(e *Env) any {
			one := incAlterBroker(e, "1", "log.dirs", "/x", 0).Resources[0]
			def := incAlterBroker(e, "", "log.dirs", "/x", 0).Resources[0]
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r := kmsg.NewIncrementalAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			for _, kv := range [][2]string{{"num.partitions", "3"}, {"log.retention.hours", "5"}} {
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = kv[0], sp(kv[1])
				r.Configs = append(r.Configs, c)
			}
			req.Resources = append(req.Resources, r)
			two := Do[*kmsg.IncrementalAlterConfigsResponse](e, req).Resources[0]
			return map[string]any{"broker": text(one.ErrorCode, one.ErrorMessage), "default": text(def.ErrorCode, def.ErrorMessage), "two": text(two.ErrorCode, two.ErrorMessage)}
		}},
		{"DescribeConfigs", "topic with retention.ms set: synonyms", func(e *Env) any {
			e.CreateTopic("dcs", 1, "retention.ms", "1000")
			return describeConfigsSyn(e, 2, "dcs", "retention.ms", "segment.ms", "max.message.bytes", "retention.bytes")
		}},
		{"DescribeConfigs", "share group configs with synonyms", func(e *Env) any {
			findCoordinator(e, "g-syn", 0)
			set := groupConfig(e, "g-syn", "share.auto.offset.reset", "earliest")
			var d *kmsg.DescribeConfigsResponse
			e.waitFor("the group config", func() bool {
				d = describeConfigsSyn(e, 32, "g-syn", "share.auto.offset.reset", "share.delivery.count.limit", "share.record.lock.duration.ms")
				for _, c := range d.Resources[0].Configs {
					if c.Name == "share.auto.offset.reset" && c.Value != nil && *c.Value == "earliest" {
						return true
					}
				}
				return false
			})
			return map[string]any{"set": set, "describe": d}
		}},
		{"IncrementalAlterConfigs", "broker: log.cleaner.threads out of bounds: messages", func(e *Env) any {
			out := map[string]any{}
			for k, v := range map[string]string{"zero": "0", "moreThanDouble": "3", "negative": "-1"} {
				r := incAlterBroker(e, "1", "log.cleaner.threads", v, 0).Resources[0]
				out[k] = text(r.ErrorCode, r.ErrorMessage)
			}
			return out
		}},
		{"IncrementalAlterConfigs", "share group configs: messages", func(e *Env) any {
			out := map[string]any{}
			for k, kv := range map[string][2]string{
				"notANumber": {"share.delivery.count.limit", "abc"},
				"aboveRange": {"share.delivery.count.limit", "50"},
				"belowMin":   {"share.record.lock.duration.ms", "999"},
				"belowRange": {"share.record.lock.duration.ms", "14000"},
				"badReset":   {"share.auto.offset.reset", "foo"},
				// The consumer group (KIP-848) keys beside them.
				"consumerSessionAbove":   {"consumer.session.timeout.ms", "61000"},
				"consumerSessionZero":    {"consumer.session.timeout.ms", "0"},
				"consumerHeartbeatBelow": {"consumer.heartbeat.interval.ms", "4000"},
				// Bounded by the broker's group.*.min/max.* properties.
				"deliveryCountAboveMax": {"share.delivery.count.limit", "11"},
				"recordLocksAboveMax":   {"share.partition.max.record.locks", "4001"},
				"recordLocksBelowMin":   {"share.partition.max.record.locks", "99"},
				"recordLocksInRange":    {"share.partition.max.record.locks", "3000"},
				"standbysAboveMax":      {"streams.num.standby.replicas", "3"},
				"streamsSessionAbove":   {"streams.session.timeout.ms", "60001"},
				"shareHeartbeatAbove":   {"share.heartbeat.interval.ms", "15001"},
			} {
				r := groupConfig(e, "g-msg", kv[0], kv[1]).Resources[0]
				out[k] = text(r.ErrorCode, r.ErrorMessage)
			}
			return out
		}},
	}
}
