package broker

// Group configs (resource type GROUP of DescribeConfigs and
// IncrementalAlterConfigs): the settings of share groups, which package
// share reads through shareSettings (shares.go) and the group coordinator
// through shareTimeouts. They are cluster metadata, a configMaps
// collection: etcd's /gregor/group-configs/<group> in a cluster (in every
// broker's snapshot), __meta/group-configs.json on a single node.

import (
	"context"
	"maps"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupConfigValue returns a group config's value and whether the group
// sets it.
func (b *Broker) groupConfigValue(group, name string) (string, bool) {
	if v, ok := b.groupConfigs.of(group)[name]; ok {
		return v, true
	}
	d := config.Group(name)
	if d == nil {
		return "", false
	}
	if d.BrokerProp != "" {
		return b.cfg.stringProp(d.BrokerProp), false
	}
	return d.Default, false
}

// groupConfigInt returns a group config's effective value: the group's
// own within the broker's current bounds (config.GroupDef.Clamp), else
// the broker's.
func (b *Broker) groupConfigInt(group, name string) int64 {
	v, set := b.groupConfigValue(group, name)
	n, _ := strconv.ParseInt(v, 10, 64)
	if d := config.Group(name); set && d != nil {
		n = d.Clamp(n, b.cfg.int64Prop)
	}
	return n
}

// initGroupConfigs opens a single node's group configs; a cluster's are
// its collection, once joined (startCluster).
func (b *Broker) initGroupConfigs() error {
	if b.cfg.clusterConfigured() {
		return nil
	}
	f, err := b.openObjectFile(groupConfigsFileName, "groups")
	if err != nil {
		return err
	}
	b.groupConfigs.use(f)
	return nil
}

// groupConfigsFileName is the single node's group config store under
// __meta.
const groupConfigsFileName = "group-configs.json"

// updateGroupConfigs replaces a group's configs by what change makes of
// the current ones (a copy the change may modify; empty removes them),
// conditioned on them, so a concurrent change through another broker is
// not lost; the change is visible here when this returns.
func (b *Broker) updateGroupConfigs(group string, change func(cur map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	var rejected *kerr.Error
	var rejectMsg string
	ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
	defer cancel()
	_, err := b.groupConfigs.modify(ctx, group, func(cur map[string]string) (map[string]string, error) {
		next, e, msg := change(cur)
		if e != nil {
			rejected, rejectMsg = e, msg
			return nil, errConfigRejected
		}
		return next, nil
	})
	if rejected != nil {
		return rejected, rejectMsg
	}
	if err != nil {
		b.log.Error("alter group configs", "group", group, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}

// dropGroupConfigs removes a deleted group's configs, in the background:
// it runs under the group coordinator's lock. Only the configs seen now
// are removed, never a newer setting.
func (b *Broker) dropGroupConfigs(group string) {
	seen := b.groupConfigs.of(group)
	if seen == nil {
		return
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
		defer cancel()
		_, err := b.groupConfigs.modify(ctx, group, func(cur map[string]string) (map[string]string, error) {
			if !maps.Equal(cur, seen) {
				return cur, nil
			}
			return nil, nil
		})
		if err != nil {
			b.log.Warn("deleting a deleted group's configs", "group", group, "err", err)
		}
	}()
}

// consumerTimeouts gives the coordinator a consumer group's session timeout
// and heartbeat interval.
func (b *Broker) consumerTimeouts(group string) (time.Duration, time.Duration) {
	return time.Duration(b.groupConfigInt(group, "consumer.session.timeout.ms")) * time.Millisecond,
		time.Duration(b.groupConfigInt(group, "consumer.heartbeat.interval.ms")) * time.Millisecond
}

// shareTimeouts gives the coordinator a group's session timeout and
// heartbeat interval.
func (b *Broker) shareTimeouts(group string) (time.Duration, time.Duration) {
	return time.Duration(b.groupConfigInt(group, "share.session.timeout.ms")) * time.Millisecond,
		time.Duration(b.groupConfigInt(group, "share.heartbeat.interval.ms")) * time.Millisecond
}

// streamsSettings gives the coordinator a streams group's group configs.
func (b *Broker) streamsSettings(group string) coordinator.StreamsSettings {
	ms := func(name string) time.Duration {
		return time.Duration(b.groupConfigInt(group, name)) * time.Millisecond
	}
	s := coordinator.StreamsSettings{
		SessionTimeout:        ms("streams.session.timeout.ms"),
		HeartbeatInterval:     ms("streams.heartbeat.interval.ms"),
		InitialRebalanceDelay: ms("streams.initial.rebalance.delay.ms"),
		NumStandbyReplicas:    int(b.groupConfigInt(group, "streams.num.standby.replicas")),
	}
	if s.InitialRebalanceDelay == 0 {
		s.InitialRebalanceDelay = -1 // Kafka's 0 is none; the coordinator's 0 is its default
	}
	return s
}
