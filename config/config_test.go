package config

import (
	"strconv"
	"testing"
	"time"
)

// TestDefs_Consistent: every name is defined once, every non-empty default
// passes its own validation, every topic config's synonym is a broker
// property of the same type, and group configs' broker properties exist.
func TestDefs_Consistent(t *testing.T) {
	for _, set := range []struct {
		what string
		defs []Def
	}{{"topic", TopicDefs}, {"broker", BrokerDefs}} {
		seen := map[string]bool{}
		for _, d := range set.defs {
			if seen[d.Name] {
				t.Errorf("%s config %s defined twice", set.what, d.Name)
			}
			seen[d.Name] = true
			if d.Default != "" && d.Validate(d.Default) != nil {
				t.Errorf("%s config %s: its default %q does not validate: %v", set.what, d.Name, d.Default, d.Validate(d.Default))
			}
		}
	}
	for _, d := range TopicDefs {
		if d.Synonym == "" {
			continue
		}
		bd := Broker(d.Synonym)
		if bd == nil || bd.Type != d.Type {
			t.Errorf("topic config %s: synonym %s is not a broker property of its type (%v)", d.Name, d.Synonym, bd)
		}
	}
	for _, g := range GroupDefs {
		if g.BrokerProp != "" && Broker(g.BrokerProp) == nil {
			t.Errorf("group config %s: broker property %s unknown", g.Name, g.BrokerProp)
		}
		if err := ValidateGroup(&g, g.Default); err != nil {
			t.Errorf("group config %s: its default does not validate: %v", g.Name, err)
		}
		for _, p := range []string{g.MinProp, g.MaxProp} {
			if p != "" && Broker(p) == nil {
				t.Errorf("group config %s: bound %s is not a broker property", g.Name, p)
			}
		}
		if err := ValidateGroupValues(map[string]string{g.Name: g.Default}, brokerInts(nil)); err != nil {
			t.Errorf("group config %s: its default is outside the default bounds: %v", g.Name, err)
		}
	}
}

// TestValidateTopic asserts the messages Kafka 4.4 gives for the same
// values (kafka-topics --create --config, kafka-configs --alter).
func TestValidateTopic(t *testing.T) {
	for _, c := range []struct{ name, value, err string }{
		{"retention.ms", "-1", ""},
		{"retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"retention.ms", "-5", "Invalid value -5 for configuration retention.ms: Value must be at least -1"},
		{"cleanup.policy", "compact,delete", ""},
		{"cleanup.policy", "foo", "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"},
		{"compression.type", "foo", "Invalid value foo for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"max.message.bytes", "99999999999", "Invalid value 99999999999 for configuration max.message.bytes: Not a number of type INT"},
		{"segment.bytes", "x", "Invalid value x for configuration segment.bytes: Not a number of type INT"},
		{"segment.bytes", "100", "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"},
		{"preallocate", "maybe", "Invalid value maybe for configuration preallocate: Expected value to be either true or false"},
		{"no.such.config", "1", "unknown topic config name: no.such.config"},
		// The configs Kafka 4.4 lists that Gregor stores without acting on.
		{"compression.gzip.level", "-1", ""},
		{"compression.gzip.level", "9", ""},
		{"compression.gzip.level", "10", "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.lz4.level", "18", "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"},
		{"compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"},
		{"compression.zstd.level", "-131073", "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072"},
		{"max.decompressed.message.bytes", "0", "Invalid value 0 for configuration max.decompressed.message.bytes: Value must be at least 1"},
		{"max.decompressed.message.bytes", "2147483640", "Invalid value 2147483640 for configuration max.decompressed.message.bytes: Value must be no more than 2147483639"},
		{"remote.copy.lag.ms", "-2", "Invalid value -2 for configuration remote.copy.lag.ms: Value must be at least -1"},
		{"remote.copy.lag.bytes", "-2", "Invalid value -2 for configuration remote.copy.lag.bytes: Value must be at least -1"},
		{"errors.deadletterqueue.group.enable", "x", "Invalid value x for configuration errors.deadletterqueue.group.enable: Expected value to be either true or false"},
		{"remote.log.copy.disable", "true", ""},
	} {
		err := ValidateTopic(c.name, c.value)
		if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("ValidateTopic(%s, %s) = %v, want %q", c.name, c.value, err, c.err)
		}
	}
}

// TestValidateGroup asserts Kafka 4.4's messages (kafka-configs --alter
// --entity-type groups --add-config) for a value's type and lower bound.
func TestValidateGroup(t *testing.T) {
	for _, c := range []struct{ name, value, err string }{
		{"share.delivery.count.limit", "abc", "Invalid value abc for configuration share.delivery.count.limit: Not a number of type INT"},
		{"consumer.session.timeout.ms", "0", "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{"share.delivery.count.limit", "1", "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"share.record.lock.duration.ms", "999", "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"share.heartbeat.interval.ms", "0", "Invalid value 0 for configuration share.heartbeat.interval.ms: Value must be at least 1"},
		{"share.partition.max.record.locks", "99", "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"},
		{"share.renew.acknowledge.enable", "yes", "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false"},
		{"share.isolation.level", "READ_COMMITTED", "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"share.auto.offset.reset", "foo", "Invalid value foo for configuration share.auto.offset.reset: Invalid value `foo` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
	} {
		err := ValidateGroup(Group(c.name), c.value)
		if err == nil || err.Error() != c.err {
			t.Errorf("ValidateGroup(%s, %s) = %v, want %q", c.name, c.value, err, c.err)
		}
	}
}

// brokerInts reads broker properties from props, else their defaults.
func brokerInts(props map[string]string) func(string) int64 {
	return func(name string) int64 {
		v, ok := props[name]
		if !ok {
			v = Broker(name).Default
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(name + ": " + v)
		}
		return n
	}
}

// TestValidateGroupValues: a group's values within the bounds the broker's
// group.*.min/max.* properties set, and each session above its heartbeat,
// with Kafka 4.4's messages (GroupConfig.validate).
func TestValidateGroupValues(t *testing.T) {
	for _, c := range []struct {
		props  map[string]string
		values map[string]string
		err    string
	}{
		{nil, map[string]string{"consumer.session.timeout.ms": "61000"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{nil, map[string]string{"consumer.heartbeat.interval.ms": "4000"}, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{nil, map[string]string{"share.delivery.count.limit": "50"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{nil, map[string]string{"share.record.lock.duration.ms": "14000"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{nil, map[string]string{"share.session.timeout.ms": "1"}, "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{nil, map[string]string{"share.partition.max.record.locks": "4001"}, "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{nil, map[string]string{"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to 2"},
		{nil, map[string]string{"streams.num.standby.replicas": "2", "share.delivery.count.limit": "10", "streams.initial.rebalance.delay.ms": "999999"}, ""},
		// In Kafka's order: consumer before share.
		{nil, map[string]string{"share.delivery.count.limit": "50", "consumer.session.timeout.ms": "1"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		// The broker's bounds move the range.
		{map[string]string{"group.share.max.delivery.count.limit": "20"}, map[string]string{"share.delivery.count.limit": "20"}, ""},
		{map[string]string{"group.share.max.delivery.count.limit": "20"}, map[string]string{"share.delivery.count.limit": "21"}, "share.delivery.count.limit must be in the range 2 to 20 inclusive."},
		{map[string]string{"group.share.min.delivery.count.limit": "4"}, map[string]string{"share.delivery.count.limit": "3"}, "share.delivery.count.limit must be in the range 4 to 10 inclusive."},
		{map[string]string{"group.streams.max.standby.replicas": "5"}, map[string]string{"streams.num.standby.replicas": "5"}, ""},
		// A session at or below its heartbeat, the broker's value standing
		// for the one the group does not set.
		{map[string]string{"group.consumer.min.session.timeout.ms": "10000", "group.consumer.max.heartbeat.interval.ms": "30000"},
			map[string]string{"consumer.session.timeout.ms": "20000", "consumer.heartbeat.interval.ms": "20000"},
			"consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{map[string]string{"group.share.min.session.timeout.ms": "1000"},
			map[string]string{"share.session.timeout.ms": "5000"},
			"share.session.timeout.ms must be greater than share.heartbeat.interval.ms"},
		{map[string]string{"group.streams.max.heartbeat.interval.ms": "50000"},
			map[string]string{"streams.heartbeat.interval.ms": "45000"},
			"streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms"},
		{map[string]string{"group.streams.max.heartbeat.interval.ms": "50000"},
			map[string]string{"streams.heartbeat.interval.ms": "44999"}, ""},
	} {
		err := ValidateGroupValues(c.values, brokerInts(c.props))
		if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("props %v, values %v: %v, want %q", c.props, c.values, err, c.err)
		}
	}
}

// TestGroupConfigClamp: a group's value left outside the broker's bounds
// by a later change of them is capped to them (GroupConfig.evaluate).
func TestGroupConfigClamp(t *testing.T) {
	d := Group("share.delivery.count.limit")
	get := brokerInts(map[string]string{"group.share.min.delivery.count.limit": "3", "group.share.max.delivery.count.limit": "8"})
	for in, want := range map[int64]int64{2: 3, 3: 3, 5: 5, 8: 8, 9: 8} {
		if got := d.Clamp(in, get); got != want {
			t.Errorf("Clamp(%d) = %d, want %d", in, got, want)
		}
	}
	if got := Group("streams.initial.rebalance.delay.ms").Clamp(999999, get); got != 999999 {
		t.Errorf("an unbounded config was clamped to %d", got)
	}
}

// TestCheckGroupProps: the broker properties that bound group configs,
// checked as Kafka 4.4 checks them before it starts.
func TestCheckGroupProps(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		err   string
	}{
		{nil, ""},
		{map[string]string{"group.consumer.session.timeout.ms": "90000"}, "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{map[string]string{"group.consumer.session.timeout.ms": "90000", "group.consumer.max.session.timeout.ms": "90000"}, ""},
		{map[string]string{"group.consumer.min.heartbeat.interval.ms": "20000"}, "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{map[string]string{"group.share.heartbeat.interval.ms": "1000"}, "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"},
		{map[string]string{"group.streams.min.session.timeout.ms": "10000", "group.streams.session.timeout.ms": "10000", "group.streams.max.heartbeat.interval.ms": "20000", "group.streams.heartbeat.interval.ms": "10000"},
			"group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms"},
		{map[string]string{"group.streams.num.standby.replicas": "3"}, "group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"},
		{map[string]string{"group.share.max.delivery.count.limit": "6", "group.share.delivery.count.limit": "8"}, "group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit"},
		{map[string]string{"group.share.min.delivery.count.limit": "5", "group.share.delivery.count.limit": "4"}, "group.share.delivery.count.limit must be greater than or equal to group.share.min.delivery.count.limit"},
		{map[string]string{"group.share.partition.max.record.locks": "5000"}, "group.share.max.partition.max.record.locks must be greater than or equal to group.share.partition.max.record.locks"},
		{map[string]string{"group.share.record.lock.duration.ms": "10000"}, "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{map[string]string{"group.share.record.lock.duration.ms": "70000"}, "group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms"},
	} {
		err := CheckGroupProps(brokerInts(c.props))
		if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("props %v: %v, want %q", c.props, err, c.err)
		}
	}
}

// The share group broker properties have Kafka 4.4's ranges
// (ShareGroupConfig): group.share.delivery.count.limit 2 to 10,
// group.share.record.lock.duration.ms 1,000 to 3,600,000.
func TestBrokerShareGroupRanges(t *testing.T) {
	for _, tc := range []struct{ name, value, err string }{
		{"group.share.delivery.count.limit", "10", ""},
		{"group.share.delivery.count.limit", "11", "Value must be no more than 10"},
		{"group.share.delivery.count.limit", "1", "Value must be at least 2"},
		{"group.share.record.lock.duration.ms", "3600000", ""},
		{"group.share.record.lock.duration.ms", "3600001", "Value must be no more than 3600000"},
		{"group.share.record.lock.duration.ms", "999", "Value must be at least 1000"},
	} {
		d := Broker(tc.name)
		if d == nil {
			t.Fatalf("%s: no definition", tc.name)
		}
		err := d.Validate(tc.value)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.err {
				t.Errorf("%s=%s: %q, want %q", tc.name, tc.value, got, tc.err)
			}
		} else if tc.err != "" {
			t.Errorf("%s=%s accepted, want %q", tc.name, tc.value, tc.err)
		}
	}
}

func TestListenerConfigName(t *testing.T) {
	for in, want := range map[string]string{
		"ssl.keystore.location":                                 "ssl.keystore.location",
		"listener.name.external.ssl.keystore.location":          "ssl.keystore.location",
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "sasl.jaas.config",
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":   "sasl.jaas.config",
		"listener.name.internal.max.connection.creation.rate":   "max.connection.creation.rate",
	} {
		if got := ListenerConfigName(in); got != want {
			t.Errorf("ListenerConfigName(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestShareAutoOffsetReset: Kafka 4.4's values of share.auto.offset.reset
// (AutoOffsetResetStrategy.fromString): java.time.Duration's format,
// negative durations refused.
func TestShareAutoOffsetReset(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"by_duration:PT1H":            time.Hour,
		"by_duration:P1DT2H3M4S":      26*time.Hour + 3*time.Minute + 4*time.Second,
		"by_duration:pt0.5s":          500 * time.Millisecond,
		"BY_DURATION:PT1H":            -1, // the keyword in lower case only, as Kafka's
		"by_duration:P2D":             48 * time.Hour,
		"by_duration:PT-1H30M":        -time.Hour + 30*time.Minute, // parts are signed, the whole is not negative
		"by_duration:PT0S":            0,
		"by_duration:-PT1H":           -1,
		"by_duration:PT":              -1,
		"by_duration:P":               -1,
		"by_duration:1h":              -1,
		"by_duration:":                -1,
		"by_duration:PT1.1234567891S": -1,
	} {
		_, byDuration, d, ok := ShareAutoOffsetReset(v)
		if want < 0 {
			if ok {
				t.Errorf("%q accepted (%v)", v, d)
			}
			continue
		}
		if !ok || !byDuration || d != want {
			t.Errorf("%q: %v %v %v, want %v", v, ok, byDuration, d, want)
		}
	}
	if e, b, _, ok := ShareAutoOffsetReset("earliest"); !ok || !e || b {
		t.Error("earliest")
	}
	if _, _, _, ok := ShareAutoOffsetReset("Earliest"); ok {
		t.Error("Earliest accepted")
	}
	if e, b, _, ok := ShareAutoOffsetReset("latest"); !ok || e || b {
		t.Error("latest")
	}
	if err := ValidateGroup(Group("share.auto.offset.reset"), "by_duration:PT10M"); err != nil {
		t.Error(err)
	}
}
