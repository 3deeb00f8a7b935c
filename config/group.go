package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GroupDef is one group config (KIP-848, KIP-932): its default, the broker
// property that supplies it when there is one, and its bounds.
type GroupDef struct {
	Name, BrokerProp, Default string
	Min, Max                  int64 // for ints
	Enum                      []string
	Doc                       string
}

// GroupDefs are the group configs Gregor knows.
var GroupDefs = []GroupDef{
	{Name: "share.auto.offset.reset", Default: "latest", Enum: []string{"latest", "earliest"},
		Doc: "Where a share group starts on a partition without share-partition state."},
	{Name: "share.record.lock.duration.ms", BrokerProp: "group.share.record.lock.duration.ms", Default: "30000", Min: 15000, Max: 60000,
		Doc: "The acquisition lock duration of records fetched by a share group."},
	{Name: "share.session.timeout.ms", BrokerProp: "group.share.session.timeout.ms", Default: "45000", Min: 45000, Max: 60000,
		Doc: "The timeout to detect share group members that stopped heartbeating."},
	{Name: "share.heartbeat.interval.ms", BrokerProp: "group.share.heartbeat.interval.ms", Default: "5000", Min: 5000, Max: 15000,
		Doc: "The heartbeat interval given to share group members."},
	{Name: "share.delivery.count.limit", BrokerProp: "group.share.delivery.count.limit", Default: "5", Min: 2, Max: 10,
		Doc: "The number of deliveries of a record after which it is archived."},
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

// ValidateGroup checks a value of the group config d.
func ValidateGroup(d *GroupDef, v string) error {
	if d.Enum != nil {
		if !slices.Contains(d.Enum, v) {
			return fmt.Errorf("invalid value %s for configuration %s: must be one of %s", v, d.Name, strings.Join(d.Enum, ", "))
		}
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("invalid value %s for configuration %s: not a number", v, d.Name)
	}
	if n < d.Min || n > d.Max {
		return fmt.Errorf("invalid value %s for configuration %s: must be between %d and %d", v, d.Name, d.Min, d.Max)
	}
	return nil
}
