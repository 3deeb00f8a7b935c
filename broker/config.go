package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/metadata"
	"github.com/gregor-broker/gregor/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is the broker's static configuration.
type Config struct {
	// Listen is the TCP address to listen on; default 127.0.0.1:9092.
	Listen string
	// Advertise is the host:port returned in Metadata; default: the
	// address actually bound.
	Advertise string
	// DataDir holds the partitions and the broker's metadata; default ./data.
	DataDir string
	// Props are Kafka-named broker properties (num.partitions,
	// log.retention.ms, …), from --config and --set.
	Props map[string]string
	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// Now is the broker's clock; nil means time.Now.
	Now func() time.Time
	// Version is the version gregor_build_info reports (cmd/gregor's
	// gregor version); empty means the main module's from the build info.
	Version string
	// JoinCluster starts this broker's part of the cluster's metadata
	// store when the properties ask for cluster mode
	// (controller.quorum.voters or etcd.endpoints). cmd/gregor sets it to
	// package cluster's etcd implementation; left nil, the broker links
	// none of it and refuses cluster mode.
	JoinCluster func(context.Context, metadata.JoinConfig) (Cluster, error)
}

// ParseProperties reads a Java-style properties file (key=value or key:value
// lines, # and ! comments) into props.
func ParseProperties(r io.Reader, props map[string]string) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || s[0] == '!' {
			continue
		}
		i := strings.IndexAny(s, "=:")
		if i <= 0 {
			return fmt.Errorf("line %d: expected key=value", line)
		}
		props[strings.TrimSpace(s[:i])] = strings.TrimSpace(s[i+1:])
	}
	return sc.Err()
}

// validateProps checks the known broker properties and warns about unknown
// ones, as Kafka does.
func validateProps(props map[string]string, log *slog.Logger) error {
	for k, v := range props {
		d := config.Broker(config.ListenerConfigName(k))
		if d == nil {
			log.Warn("unknown configuration supplied, ignored", "name", k)
			continue
		}
		if err := d.Validate(v); err != nil {
			return fmt.Errorf("config %s: %w", k, err)
		}
	}
	return nil
}

// brokerValue returns a broker property's effective value and source.
func (c *Config) brokerValue(name string) (string, kmsg.ConfigSource) {
	if v, ok := c.Props[name]; ok {
		return v, kmsg.ConfigSourceStaticBrokerConfig
	}
	switch name { // derived from coarser units, as Kafka derives them
	case "log.retention.ms":
		if v, ok := c.Props["log.retention.minutes"]; ok {
			return scaleMs(v, 60_000), kmsg.ConfigSourceStaticBrokerConfig
		}
		if v, ok := c.Props["log.retention.hours"]; ok {
			return scaleMs(v, 3_600_000), kmsg.ConfigSourceStaticBrokerConfig
		}
		return config.WeekMs, kmsg.ConfigSourceDefaultConfig
	case "log.roll.ms":
		if v, ok := c.Props["log.roll.hours"]; ok {
			return scaleMs(v, 3_600_000), kmsg.ConfigSourceStaticBrokerConfig
		}
		return config.WeekMs, kmsg.ConfigSourceDefaultConfig
	}
	if d := config.Broker(name); d != nil {
		return d.Default, kmsg.ConfigSourceDefaultConfig
	}
	return "", kmsg.ConfigSourceUnknown
}

func scaleMs(v string, unit int64) string {
	n, _ := strconv.ParseInt(v, 10, 64)
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*unit, 10)
}

func (c *Config) int64Prop(name string) int64 {
	v, _ := c.brokerValue(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

func (c *Config) stringProp(name string) string {
	v, _ := c.brokerValue(name)
	return v
}

func (c *Config) boolProp(name string) bool {
	v, _ := c.brokerValue(name)
	return v == "true"
}

// topicConfigValue is a topic config's effective value and where it came
// from: the topic's override, the broker property (dynamic, dynconfig.go,
// or static), or Kafka's default.
func (b *Broker) topicConfigValue(overrides map[string]string, name string) (string, kmsg.ConfigSource) {
	if v, ok := overrides[name]; ok {
		return v, kmsg.ConfigSourceDynamicTopicConfig
	}
	d := config.Topic(name)
	if d == nil {
		return "", kmsg.ConfigSourceUnknown
	}
	if v, src := b.brokerValue(d.Synonym); src != kmsg.ConfigSourceDefaultConfig && src != kmsg.ConfigSourceUnknown {
		return v, src
	}
	return d.Default, kmsg.ConfigSourceDefaultConfig
}

func (b *Broker) topicInt(overrides map[string]string, name string) int64 {
	v, _ := b.topicConfigValue(overrides, name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// storageConfig maps a topic's effective configs to the log's.
func (b *Broker) storageConfig(t *topic) storage.Config {
	c := storage.DefaultConfig()
	o := t.configs
	c.SegmentBytes = b.topicInt(o, "segment.bytes")
	c.SegmentMs = b.topicInt(o, "segment.ms")
	c.IndexIntervalBytes = int32(b.topicInt(o, "index.interval.bytes"))
	c.RetentionMs = b.topicInt(o, "retention.ms")
	c.RetentionBytes = b.topicInt(o, "retention.bytes")
	c.FlushMessages = b.topicInt(o, "flush.messages")
	c.FlushMs = b.topicInt(o, "flush.ms")
	if policy, _ := b.topicConfigValue(o, "cleanup.policy"); isCompacted(policy) {
		// Compacted: segment.ms is capped by max.compaction.lag.ms so that
		// the head becomes cleanable in time (KIP-354); without delete,
		// retention deletes nothing.
		c.SegmentMs = min(c.SegmentMs, b.topicInt(o, "max.compaction.lag.ms"))
		if !slices.Contains(config.SplitList(policy), "delete") {
			c.RetentionMs, c.RetentionBytes = -1, -1
		}
	}
	c.Now = b.cfg.Now
	if testIOFaults {
		c.BeforeIO = b.injectedIOError
	}
	c.Decompress = decompress
	c.Logger = b.log.With("topic", t.name)
	c.OwnedFiles = ownedPartitionFiles
	return c
}

// produceSettings are the topic configs every produce consults, parsed
// once per change of the topic's configs instead of on every request.
type produceSettings struct {
	maxMessageBytes   int64
	minInsyncReplicas int64
	logAppendTime     bool
	tsAfterMaxMs      int64
	tsBeforeMaxMs     int64
	compacted         bool // cleanup.policy has compact: records need keys
	// schemas checks keys or values against the schema registry
	// (confluent.*.schema.validation); nil when neither is on.
	schemas *schemaCheck
}

func (b *Broker) produceSettingsFor(overrides map[string]string) produceSettings {
	ts, _ := b.topicConfigValue(overrides, "message.timestamp.type")
	return produceSettings{
		maxMessageBytes:   b.topicInt(overrides, "max.message.bytes"),
		minInsyncReplicas: b.topicInt(overrides, "min.insync.replicas"),
		logAppendTime:     ts == "LogAppendTime",
		tsAfterMaxMs:      b.topicInt(overrides, "message.timestamp.after.max.ms"),
		tsBeforeMaxMs:     b.topicInt(overrides, "message.timestamp.before.max.ms"),
		compacted:         isCompacted(b.topicValue(overrides, "cleanup.policy")),
		schemas:           b.schemaCheckFor(overrides),
	}
}
