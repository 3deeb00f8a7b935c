package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GroupDef is one group config (KIP-848, KIP-932, KIP-1071): its default,
// the broker property that supplies it when there is one, and its bounds.
type GroupDef struct {
	Name, BrokerProp, Default string
	AtLeast                   int64 // for ints: the lower bound of Kafka's ConfigDef, checked first
	// For ints: the broker properties bounding a group's value
	// (GroupConfig.validate), both or MaxProp alone; none, no bound.
	MinProp, MaxProp string
	Enum             []string
	Bool             bool // a boolean: true or false, in any case
	Doc              string
}

// GroupDefs are the group configs Gregor knows.
var GroupDefs = []GroupDef{
	{Name: "consumer.heartbeat.interval.ms", BrokerProp: "group.consumer.heartbeat.interval.ms", Default: "5000", AtLeast: 1,
		MinProp: "group.consumer.min.heartbeat.interval.ms", MaxProp: "group.consumer.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to consumer group (KIP-848) members."},
	{Name: "consumer.session.timeout.ms", BrokerProp: "group.consumer.session.timeout.ms", Default: "45000", AtLeast: 1,
		MinProp: "group.consumer.min.session.timeout.ms", MaxProp: "group.consumer.max.session.timeout.ms",
		Doc: "The timeout to detect consumer group (KIP-848) members that stopped heartbeating."},
	{Name: "share.auto.offset.reset", Default: "latest", Enum: []string{"latest", "earliest", "by_duration:<PnDTnHnMn.nS>"},
		Doc: "Where a share group starts on a partition without share-partition state: its high watermark (latest), its log start offset (earliest), or its first record at most the duration old (by_duration:<ISO-8601 duration>)."},
	{Name: "share.isolation.level", Default: "read_uncommitted", Enum: []string{"read_committed", "read_uncommitted"},
		Doc: "What a share group is given of transactional records: read_committed, only committed ones, below the last stable offset; read_uncommitted, all of them."},
	{Name: "share.renew.acknowledge.enable", Default: "true", Bool: true,
		Doc: "Whether members of a share group may renew the acquisition locks of their records (the RENEW acknowledgement)."},
	{Name: "share.heartbeat.interval.ms", BrokerProp: "group.share.heartbeat.interval.ms", Default: "5000", AtLeast: 1,
		MinProp: "group.share.min.heartbeat.interval.ms", MaxProp: "group.share.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to share group members."},
	{Name: "share.session.timeout.ms", BrokerProp: "group.share.session.timeout.ms", Default: "45000", AtLeast: 1,
		MinProp: "group.share.min.session.timeout.ms", MaxProp: "group.share.max.session.timeout.ms",
		Doc: "The timeout to detect share group members that stopped heartbeating."},
	{Name: "share.record.lock.duration.ms", BrokerProp: "group.share.record.lock.duration.ms", Default: "30000", AtLeast: 1000,
		MinProp: "group.share.min.record.lock.duration.ms", MaxProp: "group.share.max.record.lock.duration.ms",
		Doc: "The acquisition lock duration of records fetched by a share group."},
	{Name: "share.delivery.count.limit", BrokerProp: "group.share.delivery.count.limit", Default: "5", AtLeast: 2,
		MinProp: "group.share.min.delivery.count.limit", MaxProp: "group.share.max.delivery.count.limit",
		Doc: "The number of deliveries of a record after which it is archived."},
	{Name: "share.partition.max.record.locks", BrokerProp: "group.share.partition.max.record.locks", Default: "2000", AtLeast: 100,
		MinProp: "group.share.min.partition.max.record.locks", MaxProp: "group.share.max.partition.max.record.locks",
		Doc: "The records each share-partition of the group keeps in flight at most."},
	{Name: "streams.heartbeat.interval.ms", BrokerProp: "group.streams.heartbeat.interval.ms", Default: "5000", AtLeast: 1,
		MinProp: "group.streams.min.heartbeat.interval.ms", MaxProp: "group.streams.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to streams group members."},
	{Name: "streams.session.timeout.ms", BrokerProp: "group.streams.session.timeout.ms", Default: "45000", AtLeast: 1,
		MinProp: "group.streams.min.session.timeout.ms", MaxProp: "group.streams.max.session.timeout.ms",
		Doc: "The timeout to detect streams group members that stopped heartbeating."},
	{Name: "streams.num.standby.replicas", BrokerProp: "group.streams.num.standby.replicas", Default: "0", AtLeast: 0,
		MaxProp: "group.streams.max.standby.replicas",
		Doc:     "The number of standby replicas of each task of a streams group."},
	{Name: "streams.initial.rebalance.delay.ms", BrokerProp: "group.streams.initial.rebalance.delay.ms", Default: "3000", AtLeast: 0,
		Doc: "How long the first assignment of a streams group waits for more members."},
}

// Group returns the definition of a group config, nil for an unknown one.
func Group(name string) *GroupDef {
	for i := range GroupDefs {
		if GroupDefs[i].Name == name {
			return &GroupDefs[i]
		}
	}
	return nil
}

// ValidateGroup checks the type and ConfigDef's lower bound of a value of
// the group config d (GroupConfig's definition), with Kafka 4.4's
// messages; ValidateGroupValues checks a group's values against the
// broker's bounds.
func ValidateGroup(d *GroupDef, v string) error {
	if d.Bool {
		if t := strings.ToLower(strings.TrimSpace(v)); t != "true" && t != "false" {
			return fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", v, d.Name)
		}
		return nil
	}
	if d.Name == "share.auto.offset.reset" { // its own validator
		if _, _, _, ok := ShareAutoOffsetReset(v); !ok {
			return fmt.Errorf("Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v, d.Name, v, d.Name)
		}
		return nil
	}
	if d.Enum != nil {
		if !slices.Contains(d.Enum, v) {
			return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: %s", v, d.Name, strings.Join(d.Enum, ", "))
		}
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, d.Name)
	}
	if n < d.AtLeast {
		return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least %d", v, d.Name, d.AtLeast)
	}
	return nil
}

// Bounds returns the range the broker's properties (read by brokerInt)
// allow a group's value of d: MinProp to MaxProp, or the ConfigDef's lower
// bound to MaxProp; ok false when d has none.
func (d *GroupDef) Bounds(brokerInt func(string) int64) (lo, hi int64, ok bool) {
	if d.MaxProp == "" {
		return 0, 0, false
	}
	lo, hi = d.AtLeast, brokerInt(d.MaxProp)
	if d.MinProp != "" {
		lo = brokerInt(d.MinProp)
	}
	return lo, hi, true
}

// Clamp returns v, a group's value of d, within the broker's bounds: Kafka
// 4.4 caps a group config that a later change of the broker's bounds left
// outside them (GroupConfig.evaluate).
func (d *GroupDef) Clamp(v int64, brokerInt func(string) int64) int64 {
	if lo, hi, ok := d.Bounds(brokerInt); ok {
		return max(lo, min(v, hi))
	}
	return v
}

// groupSessions pairs each kind's session timeout with its heartbeat
// interval; a group's session must exceed its heartbeat.
var groupSessions = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

// ValidateGroupValues checks a group's configs, all of them as they would
// be after a change (each of whose values passed ValidateGroup), against
// the broker's properties (read by brokerInt), as Kafka 4.4's
// GroupConfig.validate does: each value within its bounds, then each
// session timeout above its heartbeat interval (the broker's value
// standing for one the group does not set).
func ValidateGroupValues(m map[string]string, brokerInt func(string) int64) error {
	value := func(d *GroupDef) (int64, bool) {
		v, ok := m[d.Name]
		if !ok {
			return 0, false
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		return n, true
	}
	for i := range GroupDefs {
		d := &GroupDefs[i]
		n, set := value(d)
		lo, hi, bounded := d.Bounds(brokerInt)
		switch {
		case !set || !bounded || lo <= n && n <= hi:
		case d.MinProp == "":
			return fmt.Errorf("%s must be less than or equal to %d", d.Name, hi)
		default:
			return fmt.Errorf("%s must be in the range %d to %d inclusive.", d.Name, lo, hi)
		}
	}
	for _, p := range groupSessions {
		session, hb := Group(p[0]), Group(p[1])
		s, sSet := value(session)
		h, hSet := value(hb)
		if !sSet && !hSet {
			continue
		}
		if !sSet {
			s = brokerInt(session.BrokerProp)
		}
		if !hSet {
			h = brokerInt(hb.BrokerProp)
		}
		if s <= h {
			return fmt.Errorf("%s must be greater than %s", session.Name, hb.Name)
		}
	}
	return nil
}

// CheckGroupProps checks the broker properties that bound group configs
// against each other and against the broker's own values (read by
// brokerInt), in the order and with the messages with which Kafka 4.4
// refuses to start (GroupCoordinatorConfig, ShareGroupConfig).
func CheckGroupProps(brokerInt func(string) int64) error {
	type check struct {
		a, rel, b string // a rel b must hold
	}
	var checks []check
	for _, kind := range []string{"consumer", "share", "streams"} {
		g := "group." + kind + "."
		checks = append(checks,
			check{g + "max.heartbeat.interval.ms", ">=", g + "min.heartbeat.interval.ms"},
			check{g + "heartbeat.interval.ms", ">=", g + "min.heartbeat.interval.ms"},
			check{g + "heartbeat.interval.ms", "<=", g + "max.heartbeat.interval.ms"},
			check{g + "max.session.timeout.ms", ">=", g + "min.session.timeout.ms"},
			check{g + "session.timeout.ms", ">=", g + "min.session.timeout.ms"},
			check{g + "session.timeout.ms", "<=", g + "max.session.timeout.ms"},
			check{g + "heartbeat.interval.ms", "<", g + "session.timeout.ms"})
	}
	checks = append(checks,
		check{"group.streams.num.standby.replicas", "<=", "group.streams.max.standby.replicas"},
		check{"group.share.max.delivery.count.limit", ">=", "group.share.delivery.count.limit"},
		check{"group.share.delivery.count.limit", ">=", "group.share.min.delivery.count.limit"},
		check{"group.share.max.partition.max.record.locks", ">=", "group.share.partition.max.record.locks"},
		check{"group.share.partition.max.record.locks", ">=", "group.share.min.partition.max.record.locks"},
		check{"group.share.record.lock.duration.ms", ">=", "group.share.min.record.lock.duration.ms"},
		check{"group.share.max.record.lock.duration.ms", ">=", "group.share.record.lock.duration.ms"})
	for _, c := range checks {
		a, b := brokerInt(c.a), brokerInt(c.b)
		var ok bool
		var words string
		switch c.rel {
		case ">=":
			ok, words = a >= b, "greater than or equal to"
		case "<=":
			ok, words = a <= b, "less than or equal to"
		default:
			ok, words = a < b, "less than"
		}
		if !ok {
			return fmt.Errorf("%s must be %s %s", c.a, words, c.b)
		}
	}
	return nil
}
