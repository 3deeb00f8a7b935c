package broker

import (
	"runtime"
	"testing"
)

// gregor_build_info is 1 with the version the program gave, its revision
// label and Go's version.
func TestMetrics_BuildInfo(t *testing.T) {
	b, err := New(Config{DataDir: t.TempDir(), Version: "v9.9.9-test", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := gatherGauge(t, b, "gregor_build_info"); v != 1 {
		t.Fatalf("gregor_build_info %v", v)
	}
	mfs, _ := b.Metrics().Gather()
	for _, mf := range mfs {
		if mf.GetName() != "gregor_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != "v9.9.9-test" || labels["goversion"] != runtime.Version() {
			t.Fatalf("labels %v", labels)
		}
		if _, ok := labels["revision"]; !ok {
			t.Fatalf("no revision label: %v", labels)
		}
	}
}
