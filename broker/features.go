package broker

// Feature flags (KIP-584), as ApiVersions v3+ reports them and `kafka-features
// describe` prints them: each feature Gregor knows with the range of levels
// it supports, and the level finalized in the cluster, the one clients act
// on. The supported ranges say what Gregor does:
//
//   - group.version 0-1: consumer groups of the KIP-848 protocol; at 0
//     ConsumerGroupHeartbeat and ConsumerGroupDescribe answer
//     UNSUPPORTED_VERSION, as Kafka's do (still advertised).
//   - share.version 0-2: share groups (KIP-932) at the API versions Kafka
//     4.4 uses; at 0 ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch
//     and ShareAcknowledge answer UNSUPPORTED_VERSION.
//   - transaction.version 0-2: KIP-890's epoch bump per transaction and
//     the implicit AddPartitionsToTxn of Produce v12 (part 2) are served;
//     the client chooses by the finalized level and the versions it sends.
//     Finalized at 0 until an operator upgrades it (UpdateFeatures), so
//     clients keep to version 0's protocol until then.
//   - metadata.version 7-33, finalized 33, as Kafka 4.4: it names the
//     request versions a broker serves, which Gregor reports in the keys;
//     it cannot be downgraded, as in Kafka.
//   - streams.version 0-1, finalized 1 as in Kafka 4.4: streams groups
//     (KIP-1071); at 0 StreamsGroupHeartbeat and StreamsGroupDescribe
//     answer UNSUPPORTED_VERSION (still advertised).
//   - kraft.version and eligible.leader.replicas.version 0 only: Gregor's
//     metadata lives in etcd, and it has no ELR (KIP-966).
//
// The finalized levels are changed with UpdateFeatures
// (57_update_features.go) and kept in the metastore collection "features"
// (__meta/features.json on a single node, etcd's /gregor/features/ in a
// cluster, so every broker reports the same): one record, "finalized",
// holding each changed feature's level and the finalized-features epoch
// under "epoch", which moves with each change. Features the record does
// not name are at their default level below, in epoch 1.
//
// A feature finalized at level 0 is not listed as finalized, as in Kafka;
// before v4 a supported range starting at 0 is not listed (KAFKA-17011).

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type feature struct {
	name      string
	min, max  int16
	finalized int16 // the default finalized level
}

var features = []feature{
	{"eligible.leader.replicas.version", 0, 0, 0},
	{"group.version", 0, 1, 1},
	{"kraft.version", 0, 0, 0},
	{"metadata.version", 7, 33, 33},
	{"share.version", 0, 2, 2},
	{"streams.version", 0, 1, 1},
	{"transaction.version", 0, 2, 0},
}

func featureOf(name string) *feature {
	for i := range features {
		if features[i].name == name {
			return &features[i]
		}
	}
	return nil
}

const (
	// featuresRecord is the record of the features collection.
	featuresRecord = "finalized"
	// featuresEpochKey holds the epoch in it (no feature is named so).
	featuresEpochKey = "epoch"
	// featuresFileName is the single node's features store under __meta.
	featuresFileName = "features.json"
	// defaultFeaturesEpoch is the epoch of the default levels.
	defaultFeaturesEpoch = 1
)

// initFeatures opens a single node's finalized features; a cluster's are
// its collection, once joined (startCluster).
func (b *Broker) initFeatures() error {
	if b.cfg.clusterConfigured() {
		return nil
	}
	f, err := b.openObjectFile(featuresFileName, "features")
	if err != nil {
		return err
	}
	b.features.use(f)
	return nil
}

// featureLevel returns the finalized level of one feature Gregor knows.
func (b *Broker) featureLevel(name string) int16 {
	f := featureOf(name)
	if v, ok := b.features.of(featuresRecord)[name]; ok {
		if n, err := strconv.ParseInt(v, 10, 16); err == nil {
			return int16(n)
		}
	}
	return f.finalized
}

// consumerGroupsOff and shareGroupsOff report a feature finalized at 0:
// Kafka then answers the APIs of KIP-848 consumer groups (group.version)
// or of share groups (share.version) with UNSUPPORTED_VERSION, while still
// advertising them.
func (b *Broker) consumerGroupsOff() bool { return b.featureLevel("group.version") < 1 }
func (b *Broker) shareGroupsOff() bool    { return b.featureLevel("share.version") < 1 }

// streamsGroupsOff reports streams.version finalized at 0 (KIP-1071's
// APIs answer UNSUPPORTED_VERSION).
func (b *Broker) streamsGroupsOff() bool { return b.featureLevel("streams.version") < 1 }

// finalizedFeatures returns the finalized level of every feature and the
// epoch of those levels.
func (b *Broker) finalizedFeatures() (map[string]int16, int64) {
	return finalizedFrom(b.features.of(featuresRecord))
}

func finalizedFrom(rec map[string]string) (map[string]int16, int64) {
	levels := make(map[string]int16, len(features))
	for _, f := range features {
		levels[f.name] = f.finalized
		if v, ok := rec[f.name]; ok {
			if n, err := strconv.ParseInt(v, 10, 16); err == nil {
				levels[f.name] = int16(n)
			}
		}
	}
	epoch := int64(defaultFeaturesEpoch)
	if n, err := strconv.ParseInt(rec[featuresEpochKey], 10, 64); err == nil {
		epoch = n
	}
	return levels, epoch
}

// finalizeFeatures sets the finalized levels of changes, conditioned on the
// levels as validate saw them: validate checks the changes against the
// current levels (it may run again on newer ones) and returns an error to
// give up.
func (b *Broker) finalizeFeatures(ctx context.Context, changes map[string]int16, validate func(cur map[string]int16) error) error {
	_, err := b.features.modify(ctx, featuresRecord, func(cur map[string]string) (map[string]string, error) {
		levels, epoch := finalizedFrom(cur)
		if err := validate(levels); err != nil {
			return nil, err
		}
		changed := false
		for name, l := range changes {
			changed = changed || levels[name] != l
		}
		if !changed {
			if len(cur) == 0 {
				return nil, nil // no record, none needed
			}
			return cur, nil // as it was: not written
		}
		for name, l := range changes {
			cur[name] = strconv.Itoa(int(l))
		}
		cur[featuresEpochKey] = strconv.FormatInt(epoch+1, 10)
		return cur, nil
	})
	return err
}

// setFeatures fills an ApiVersions v3+ response's features.
func (b *Broker) setFeatures(resp *kmsg.ApiVersionsResponse) {
	if resp.Version < 3 {
		return
	}
	levels, epoch := b.finalizedFeatures()
	for _, f := range features {
		if resp.Version >= 4 || f.min > 0 {
			resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: f.name, MinVersion: f.min, MaxVersion: f.max})
		}
		if l := levels[f.name]; l > 0 {
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: f.name, MinVersionLevel: l, MaxVersionLevel: l})
		}
	}
	resp.FinalizedFeaturesEpoch = epoch
}
