package coordinator

import (
	"fmt"
	"testing"
)

// TestAssignUniform_JoinerGetsItsShare: 8 members own 64 partitions 8 each;
// a 9th joins. The uniform assignor gives every member 7 or 8 partitions
// (the joiner 7), each old member keeps at least 7 of its own (only what
// the joiner needs moves), and every partition has one owner.
func TestAssignUniform_JoinerGetsItsShare(t *testing.T) {
	subs := map[string][]string{}
	prev := map[string]partitionSet{}
	for i := range 8 {
		id := fmt.Sprintf("m%d", i)
		subs[id] = []string{"t"}
		prev[id] = partitionSet{}
		for p := range 8 {
			prev[id].add("t", int32(i*8+p))
		}
	}
	subs["m8"] = []string{"t"}
	out := assignUniform(subs, map[string]int32{"t": 64}, prev)

	owner := map[int32]string{}
	for id, a := range out {
		if n := a.size(); n < 7 || n > 8 {
			t.Errorf("%s got %d partitions %v, want 7 or 8", id, n, a)
		}
		if kept := a.intersect(prev[id]).size(); id != "m8" && kept < 7 {
			t.Errorf("%s kept %d of its 8 partitions, want at least 7", id, kept)
		}
		for _, p := range a["t"] {
			if o, ok := owner[p]; ok {
				t.Errorf("partition %d assigned to %s and %s", p, o, id)
			}
			owner[p] = id
		}
	}
	if len(owner) != 64 {
		t.Errorf("%d partitions assigned, want 64", len(owner))
	}
	if n := out["m8"].size(); n != 7 {
		t.Errorf("the joiner got %d partitions, want 7", n)
	}
}

// TestAssignUniform_FewerPartitionsThanMembers: 3 partitions, owned by m0
// (2) and m1 (1), and a third member: each ends with one, m1 keeps its own.
func TestAssignUniform_FewerPartitionsThanMembers(t *testing.T) {
	subs := map[string][]string{"m0": {"t"}, "m1": {"t"}, "m2": {"t"}}
	prev := map[string]partitionSet{"m0": {"t": {0, 1}}, "m1": {"t": {2}}}
	out := assignUniform(subs, map[string]int32{"t": 3}, prev)
	for id, a := range out {
		if a.size() != 1 {
			t.Errorf("%s got %v, want one partition", id, a)
		}
	}
	if !out["m1"].has("t", 2) || !out["m0"].has("t", 0) {
		t.Errorf("assignment %v does not keep m0's 0 and m1's 2", out)
	}
}
