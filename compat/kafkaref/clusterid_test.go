package kafkaref

import "testing"

// kafka-storage format -t takes an id starting with '-' for a missing
// value: no id newClusterID makes starts with one.
func TestNewClusterID_NeverStartsWithADash(t *testing.T) {
	for range 20000 {
		if id := newClusterID(); id[0] == '-' || len(id) != 22 {
			t.Fatalf("cluster id %q", id)
		}
	}
}
