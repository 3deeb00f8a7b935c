package broker

// Dynamic broker configs (KIP-226): AlterConfigs and
// IncrementalAlterConfigs on a BROKER resource, with resource name "" for
// the cluster-wide defaults (kafka-configs.sh --entity-type brokers
// --entity-default) or this broker's node id for its own
// (--entity-name <id>). Precedence, highest first: a topic's override,
// the broker's own dynamic config (DYNAMIC_BROKER_CONFIG), the cluster-wide
// dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), --config/--set
// (STATIC_BROKER_CONFIG), Kafka's default (DEFAULT_CONFIG).
//
// Dynamic are the configs Kafka's DynamicBrokerConfig lists that Gregor
// has: the broker defaults of the topic configs (log.retention.ms,
// log.segment.bytes, log.cleanup.policy, compression.type,
// min.insync.replicas, message.max.bytes, unclean.leader.election.enable,
// …) and the thread counts (num.io.threads, num.network.threads,
// num.replica.fetchers, background.threads: accepted and reported, Gregor
// has no such pools). A change applies at once to every topic without an
// override (produce settings, the logs' retention, roll and flush, the
// cleaner's next pass; the controller's unclean elections). Other known
// broker configs are refused with Kafka's "Cannot update these configs
// dynamically"; names Gregor does not know are stored and reported
// (sensitive, as Kafka treats configs of unknown type) without effect, as
// Kafka keeps custom configs.
//
// Stored as a configMaps collection: etcd's /gregor/broker-configs/<name>
// in a cluster (one key for the defaults and one per broker, in every
// broker's snapshot), __meta/broker-configs.json on a single node.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dynState holds the dynamic broker configs this broker applies.
type dynState struct {
	store configMapStore
	cur   atomic.Pointer[dynLevels] // the levels applied, from store
	mu    sync.Mutex                // serialises applying them
}

// dynLevels are the dynamic configs in force: the cluster-wide defaults and
// this broker's own. Both are read-only.
type dynLevels struct {
	def, node map[string]string
}

const brokerConfigsFileName = "broker-configs.json"

// dynamicBrokerConfigs are the broker configs that AlterConfigs may change.
var dynamicBrokerConfigs = map[string]bool{}

// threadPoolConfigs are accepted as dynamic (Kafka's DynamicThreadPool and
// num.network.threads) and checked as Kafka checks them; Gregor runs
// goroutines, not pools of these sizes.
var threadPoolConfigs = []string{"num.io.threads", "num.network.threads", "num.replica.fetchers", "background.threads"}

func init() {
	notDynamic := []string{"remote.log.storage.system.enable", "follower.replication.throttled.replicas", "leader.replication.throttled.replicas"}
	for _, d := range config.TopicDefs {
		if d.Synonym != "" && !slices.Contains(notDynamic, d.Synonym) {
			dynamicBrokerConfigs[d.Synonym] = true
		}
	}
	for _, n := range threadPoolConfigs {
		dynamicBrokerConfigs[n] = true
	}
	for _, n := range cleanerConfigs {
		dynamicBrokerConfigs[n] = true
	}
}

// brokerSynonyms are the broker properties that set the same config, in
// Kafka's order (DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonyms(name string) []string {
	switch name {
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	}
	return []string{name}
}

func (b *Broker) dynamicLevels() *dynLevels {
	if l := b.dynConfigs.cur.Load(); l != nil {
		return l
	}
	return &dynLevels{}
}

// brokerValue is a broker config's effective value and source: dynamic
// (this broker's, then the cluster-wide default), then static.
func (b *Broker) brokerValue(name string) (string, kmsg.ConfigSource) {
	l := b.dynamicLevels()
	if v, ok := l.node[name]; ok {
		return v, kmsg.ConfigSourceDynamicBrokerConfig
	}
	if v, ok := l.def[name]; ok {
		return v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return b.cfg.brokerValue(name)
}

// dynamicSynonyms are the dynamic settings of names, this broker's first
// (when perBroker) and the cluster-wide defaults next, each level in the
// order of names, as Kafka lists synonyms.
func (b *Broker) dynamicSynonyms(names []string, perBroker bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	l := b.dynamicLevels()
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	levels := []struct {
		m   map[string]string
		src kmsg.ConfigSource
	}{{l.node, kmsg.ConfigSourceDynamicBrokerConfig}, {l.def, kmsg.ConfigSourceDynamicDefaultBrokerConfig}}
	if !perBroker {
		levels = levels[1:]
	}
	for _, lv := range levels {
		for _, n := range names {
			if v, ok := lv.m[n]; ok {
				out = append(out, config.Synonym(n, v, lv.src))
			}
		}
	}
	return out
}

// describeDynamicDefaults lists the cluster-wide dynamic defaults (resource
// name ""), as Kafka does: only those set.
func (b *Broker) describeDynamicDefaults(req *kmsg.DescribeConfigsRequest, want func(string) bool) []kmsg.DescribeConfigsResponseResourceConfig {
	def := b.dynamicLevels().def
	names := slices.Sorted(maps.Keys(def))
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, n := range names {
		if !want(n) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Source = n, kmsg.ConfigSourceDynamicDefaultBrokerConfig
		d := config.Broker(n)
		if d == nil {
			// A custom config: its type is unknown, so Kafka treats it as
			// sensitive.
			c.IsSensitive, c.ReadOnly = true, true
			if req.IncludeSynonyms {
				s := config.Synonym(n, "", c.Source)
				s.Value = nil
				c.ConfigSynonyms = append(c.ConfigSynonyms, s)
			}
			out = append(out, c)
			continue
		}
		c.Value = kmsg.StringPtr(def[n])
		c.ConfigType, c.ReadOnly = d.Type, !anyDynamic(brokerSynonyms(n))
		if req.IncludeDocumentation {
			c.Documentation = kmsg.StringPtr(d.Doc)
		}
		if req.IncludeSynonyms {
			// Kafka lists the cluster-wide level alone here.
			c.ConfigSynonyms = dropUntil(b.dynamicSynonyms(brokerSynonyms(n), false), n)
		}
		out = append(out, c)
	}
	return out
}

// synonymChain lists the settings of a broker config and its synonyms
// (brokerSynonyms) in Kafka's order: level by level (this broker's dynamic
// configs when perBroker, the cluster-wide dynamic defaults, --config and
// --set, the defaults), within a level in the order of names. Kafka 4.4
// describes log.retention.ms, set nowhere, with the synonym
// log.retention.hours=168 (DEFAULT_CONFIG).
func (b *Broker) synonymChain(names []string, perBroker bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	list := b.dynamicSynonyms(names, perBroker)
	for _, n := range names {
		if v, ok := b.cfg.Props[n]; ok {
			list = append(list, config.Synonym(n, v, kmsg.ConfigSourceStaticBrokerConfig))
		}
	}
	for _, n := range names {
		if d := config.Broker(n); d != nil && d.Default != "" {
			list = append(list, config.Synonym(n, d.Default, kmsg.ConfigSourceDefaultConfig))
		}
	}
	return list
}

// dropUntil drops the synonyms before the first named name, as Kafka does
// when it describes a broker config (a coarser unit set statically is not
// a synonym of log.retention.hours).
func dropUntil(list []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, name string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	for len(list) > 0 && list[0].Name != name {
		list = list[1:]
	}
	return list
}

func anyDynamic(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return dynamicBrokerConfigs[n] })
}

// initBrokerConfigs opens a single node's dynamic broker configs and
// applies them; a cluster's are its collection, once joined (startCluster).
func (b *Broker) initBrokerConfigs() error {
	if b.cfg.clusterConfigured() {
		return nil
	}
	f, err := b.openObjectFile(brokerConfigsFileName, "brokers")
	if err != nil {
		return err
	}
	b.dynConfigs.store.use(f)
	b.syncDynamicConfigs()
	return nil
}

// syncDynamicConfigs takes the dynamic broker configs of the store, as
// they are now; it reports whether they changed, and the caller then
// reapplies the topic defaults. It runs after this broker's own changes
// and on the metadata loop, before the topics are applied.
func (b *Broker) syncDynamicConfigs() bool {
	b.dynConfigs.mu.Lock()
	defer b.dynConfigs.mu.Unlock()
	all := b.dynConfigs.store.all()
	next := &dynLevels{def: all[""], node: all[strconv.Itoa(int(b.nodeID))]}
	cur := b.dynamicLevels()
	if maps.Equal(cur.def, next.def) && maps.Equal(cur.node, next.node) {
		return false
	}
	b.dynConfigs.cur.Store(next)
	return true
}

// reapplyTopicDefaults recomputes every topic's produce settings and log
// configs after the dynamic broker configs changed: topics without an
// override follow the new defaults.
func (b *Broker) reapplyTopicDefaults() {
	defer b.reconfigureCleaner()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.topics {
		t.produce = b.produceSettingsFor(t.configs)
		sc := b.storageConfig(t)
		for _, p := range t.partitions {
			if p.log != nil {
				p.log.UpdateConfig(sc)
			}
		}
	}
}

// errBrokerConfig is a refused dynamic broker config change: Kafka answers
// INVALID_REQUEST with the ConfigException's message (KAFKA-13609).
type errBrokerConfig struct {
	code *kerr.Error
	msg  string
}

func (e *errBrokerConfig) Error() string { return e.msg }

func invalidBrokerConfig(format string, a ...any) *errBrokerConfig {
	return &errBrokerConfig{kerr.InvalidRequest, fmt.Sprintf(format, a...)}
}

// checkBrokerResource checks a BROKER resource name: "" or this broker's id.
func (b *Broker) checkBrokerResource(name string) *errBrokerConfig {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return invalidBrokerConfig("Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != b.nodeID {
		return invalidBrokerConfig("Unexpected broker id, expected %d, but received %s", b.nodeID, name)
	}
	return nil
}

// validateBrokerConfigs checks the dynamic configs a resource would hold
// after a change, as Kafka's DynamicBrokerConfig.validate: no config that
// cannot change at runtime, values of the right type and range, thread
// counts within half and double of the current.
func (b *Broker) validateBrokerConfigs(props map[string]string) *errBrokerConfig {
	var static []string
	for n := range props {
		if config.Broker(n) != nil && !dynamicBrokerConfigs[n] {
			static = append(static, n)
		}
	}
	if len(static) > 0 {
		slices.Sort(static)
		return invalidBrokerConfig("Cannot update these configs dynamically: [%s]", strings.Join(static, ", "))
	}
	for _, n := range slices.Sorted(maps.Keys(props)) {
		d := config.Broker(n)
		if d == nil {
			continue // custom config
		}
		v := props[n]
		if reason := config.TypeError(d.Type, v); reason != "" {
			return invalidBrokerConfig("Invalid value %s for configuration %s: %s", v, n, reason)
		}
		if err := d.Validate(strings.TrimSpace(v)); err != nil {
			return invalidBrokerConfig("Invalid value %s for configuration %s: %v", v, n, err)
		}
		if n == "log.cleaner.threads" {
			// Kafka's LogCleaner.validateReconfiguration.
			cur := int64(b.cleanerThreads())
			nv, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch {
			case cur == 0: // the cleaner is off: nothing to resize
			case nv < 1:
				return invalidBrokerConfig("Log cleaner threads should be at least 1")
			case nv < cur/2:
				return invalidBrokerConfig("Log cleaner threads cannot be reduced to less than half the current value %d", cur)
			case nv > cur*2:
				return invalidBrokerConfig("Log cleaner threads cannot be increased to more than double the current value %d", cur)
			}
		}
		if slices.Contains(threadPoolConfigs, n) {
			cur, _ := strconv.ParseInt(b.brokerValueString(n), 10, 64)
			nv, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if nv != cur {
				prefix := fmt.Sprintf("Dynamic thread count update validation failed for %s=%s", n, v)
				switch {
				case nv <= 0:
					return invalidBrokerConfig("%s, value should be at least 1", prefix)
				case nv < cur/2:
					return invalidBrokerConfig("%s, value should be at least half the current value %d", prefix, cur)
				case nv > cur*2:
					return invalidBrokerConfig("%s, value should not be greater than double the current value %d", prefix, cur)
				}
			}
		}
	}
	return nil
}

func (b *Broker) brokerValueString(name string) string {
	v, _ := b.brokerValue(name)
	return v
}

// alterBrokerConfigs applies change to the dynamic configs of a BROKER
// resource ("" or this broker's id): the change's result is validated, then
// stored (etcd or the data dir) and applied here before it returns.
func (b *Broker) alterBrokerConfigs(name string, validateOnly bool, change func(cur map[string]string) (map[string]string, *errBrokerConfig)) (*kerr.Error, string) {
	if e := b.checkBrokerResource(name); e != nil {
		return e.code, e.msg
	}
	apply := func(cur map[string]string) (map[string]string, *errBrokerConfig) {
		if cur == nil {
			cur = map[string]string{}
		}
		next, e := change(cur)
		if e != nil {
			return nil, e
		}
		if e := b.validateBrokerConfigs(next); e != nil {
			return nil, e
		}
		return next, nil
	}
	if validateOnly {
		l := b.dynamicLevels()
		cur := l.def
		if name != "" {
			cur = l.node
		}
		if _, e := apply(maps.Clone(cur)); e != nil {
			return e.code, e.msg
		}
		return nil, ""
	}
	var rejected *errBrokerConfig
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	rev, err := b.dynConfigs.store.modify(ctx, name, func(cur map[string]string) (map[string]string, error) {
		next, e := apply(cur)
		if e != nil {
			rejected = e
			return nil, errConfigRejected
		}
		return next, nil
	})
	if rejected != nil {
		return rejected.code, rejected.msg
	}
	if err != nil {
		b.log.Error("alter broker configs", "resource", name, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	if rev > 0 && b.syncDynamicConfigs() {
		b.reapplyTopicDefaults()
	}
	b.log.Info("altered dynamic broker configs", "resource", name, "configs", b.dynConfigs.store.of(name))
	return nil, ""
}
