package broker

// Feature flags (KIP-584), as ApiVersions v3+ reports them and `kafka-features
// describe` prints them: each feature Gregor knows with the range of levels
// it supports, and the level finalized in the cluster, the one clients act
// on. Gregor's levels are fixed (there is no UpdateFeatures yet); they say
// what Gregor does:
//
//   - group.version 1: consumer groups of the KIP-848 protocol.
//   - share.version 2: share groups (KIP-932) at the API versions Kafka 4.4
//     uses, enabled.
//   - transaction.version: up to 2 (KIP-890's epoch bump per transaction) is
//     served, and the client chooses by the versions it sends; not
//     finalized, so clients keep to version 0's protocol until Gregor's
//     version 2 has had the testing Kafka's default needs.
//   - metadata.version 7–33, finalized 33, as Kafka 4.4: it names the
//     request versions a broker serves, which Gregor reports in the keys.
//   - kraft.version, streams.version and eligible.leader.replicas.version
//     0 only: Gregor's metadata lives in etcd, and it has neither streams
//     groups (KIP-1071) nor ELR (KIP-966).
//
// A feature finalized at level 0 is not listed as finalized, as in Kafka;
// before v4 a supported range starting at 0 is not listed (KAFKA-17011).

import "github.com/twmb/franz-go/pkg/kmsg"

type feature struct {
	name      string
	min, max  int16
	finalized int16
}

var features = []feature{
	{"eligible.leader.replicas.version", 0, 0, 0},
	{"group.version", 0, 1, 1},
	{"kraft.version", 0, 0, 0},
	{"metadata.version", 7, 33, 33},
	{"share.version", 0, 2, 2},
	{"streams.version", 0, 0, 0},
	{"transaction.version", 0, 2, 0},
}

// finalizedFeaturesEpoch is the epoch of the finalized levels, which never
// change.
const finalizedFeaturesEpoch = 1

// setFeatures fills an ApiVersions v3+ response's features.
func setFeatures(resp *kmsg.ApiVersionsResponse) {
	if resp.Version < 3 {
		return
	}
	for _, f := range features {
		if resp.Version >= 4 || f.min > 0 {
			resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: f.name, MinVersion: f.min, MaxVersion: f.max})
		}
		if f.finalized > 0 {
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: f.name, MinVersionLevel: f.finalized, MaxVersionLevel: f.finalized})
		}
	}
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
}
