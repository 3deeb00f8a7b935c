package cluster

import (
	"testing"

	"github.com/gregor-broker/gregor/metadata"
)

// The controller's unclean.leader.election.enable: the topic's override,
// else its own dynamic config, else the cluster-wide dynamic default,
// else its static one.
func TestUncleanLeaderElection_Precedence(t *testing.T) {
	meta := func(recs map[string][]byte, topicCfg map[string]string) *Metadata {
		return &Metadata{
			Topics:      map[string]*Topic{"t": {Name: "t", Configs: topicCfg}},
			Collections: map[string]metadata.RecordSet{"broker-configs": {Records: recs}},
		}
	}
	on, off := map[string]string{"unclean.leader.election.enable": "true"}, map[string]string{"unclean.leader.election.enable": "false"}
	for _, tc := range []struct {
		name     string
		m        *Metadata
		static   bool
		want     bool
		wantDyn  bool
		wantFrom bool
	}{
		{"static only", meta(nil, nil), true, true, false, false},
		{"cluster default", meta(map[string][]byte{"": []byte(`{"unclean.leader.election.enable":"true"}`)}, nil), false, true, true, true},
		{"own beats the default", meta(map[string][]byte{"": []byte(`{"unclean.leader.election.enable":"true"}`), "2": []byte(`{"unclean.leader.election.enable":"false"}`)}, nil), true, false, false, true},
		{"another broker's is not ours", meta(map[string][]byte{"3": []byte(`{"unclean.leader.election.enable":"true"}`)}, nil), false, false, false, false},
		{"other configs only", meta(map[string][]byte{"2": []byte(`{"log.retention.ms":"1"}`)}, nil), true, true, false, false},
		{"topic override beats all", meta(map[string][]byte{"2": []byte(`{"unclean.leader.election.enable":"true"}`)}, off), true, false, true, true},
		{"topic override on", meta(nil, on), false, true, false, false},
	} {
		v, ok := dynamicUnclean(tc.m, 2)
		if v != tc.wantDyn || ok != tc.wantFrom {
			t.Errorf("%s: dynamic %v/%v, want %v/%v", tc.name, v, ok, tc.wantDyn, tc.wantFrom)
		}
		def := tc.static
		if ok {
			def = v
		}
		if got := uncleanLeaderElection(tc.m, "t", def); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
