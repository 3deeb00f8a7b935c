package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// GroupDef is one group config (KIP-848, KIP-932): its default, the broker
// property that supplies it when there is one, and its bounds.
type GroupDef struct {
	Name, BrokerProp, Default string
	Min, Max                  int64 // for ints: the range the broker allows
	AtLeast                   int64 // for ints: the lower bound of Kafka's ConfigDef, checked first
	Enum                      []string
	Doc                       string
}

// GroupDefs are the group configs Gregor knows.
var GroupDefs = []GroupDef{
	{Name: "consumer.heartbeat.interval.ms", BrokerProp: "group.consumer.heartbeat.interval.ms", Default: "5000", AtLeast: 1, Min: 5000, Max: 15000,
		Doc: "The heartbeat interval given to consumer group (KIP-848) members."},
	{Name: "consumer.session.timeout.ms", BrokerProp: "group.consumer.session.timeout.ms", Default: "45000", AtLeast: 1, Min: 45000, Max: 60000,
		Doc: "The timeout to detect consumer group (KIP-848) members that stopped heartbeating."},
	{Name: "share.auto.offset.reset", Default: "latest", Enum: []string{"latest", "earliest"},
		Doc: "Where a share group starts on a partition without share-partition state."},
	{Name: "share.record.lock.duration.ms", BrokerProp: "group.share.record.lock.duration.ms", Default: "30000", AtLeast: 1000, Min: 15000, Max: 60000,
		Doc: "The acquisition lock duration of records fetched by a share group."},
	{Name: "share.session.timeout.ms", BrokerProp: "group.share.session.timeout.ms", Default: "45000", AtLeast: 1, Min: 45000, Max: 60000,
		Doc: "The timeout to detect share group members that stopped heartbeating."},
	{Name: "share.heartbeat.interval.ms", BrokerProp: "group.share.heartbeat.interval.ms", Default: "5000", AtLeast: 1, Min: 5000, Max: 15000,
		Doc: "The heartbeat interval given to share group members."},
	{Name: "share.delivery.count.limit", BrokerProp: "group.share.delivery.count.limit", Default: "5", AtLeast: 2, Min: 2, Max: 10,
		Doc: "The number of deliveries of a record after which it is archived."},
	{Name: "streams.session.timeout.ms", BrokerProp: "group.streams.session.timeout.ms", Default: "45000", AtLeast: 1, Min: 45000, Max: 60000,
		Doc: "The timeout to detect streams group members that stopped heartbeating."},
	{Name: "streams.heartbeat.interval.ms", BrokerProp: "group.streams.heartbeat.interval.ms", Default: "5000", AtLeast: 1, Min: 5000, Max: 15000,
		Doc: "The heartbeat interval given to streams group members."},
	{Name: "streams.num.standby.replicas", BrokerProp: "group.streams.num.standby.replicas", Default: "0", AtLeast: 0, Min: 0, Max: 2,
		Doc: "The number of standby replicas of each task of a streams group."},
	{Name: "streams.initial.rebalance.delay.ms", BrokerProp: "group.streams.initial.rebalance.delay.ms", Default: "3000", AtLeast: 0, Min: 0, Max: math.MaxInt32,
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

// ValidateGroup checks a value of the group config d, with Kafka 4.4's
// messages: the type and ConfigDef's lower bound first (GroupConfig's
// definition), then the range the broker allows (GroupConfig.validate).
func ValidateGroup(d *GroupDef, v string) error {
	if d.Enum != nil {
		if !slices.Contains(d.Enum, v) {
			return fmt.Errorf("Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v, d.Name, v, d.Name)
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
	if n < d.Min || n > d.Max {
		return fmt.Errorf("%s must be in the range %d to %d inclusive.", d.Name, d.Min, d.Max)
	}
	return nil
}
