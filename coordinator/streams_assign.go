package coordinator

// The sticky task assignor of streams groups (Kafka's "sticky"): every
// task (subtopology, partition) goes active to exactly one member, and,
// with num.standby.replicas = n, standby to n members of other processes
// than its active one where there are enough (never twice to one process).
// A task stays with the member that had it in the previous target
// assignment while that member stays within its share (the number of
// tasks divided by the members, a few of them one more); the others go to the least
// loaded member, preferring the least loaded process, ties broken by
// member id, so the result is deterministic. Warm-up tasks are not
// assigned.

import (
	"cmp"
	"slices"
)

// streamsAssignment is the tasks of one member: active, standby and
// warm-up, each a set of partitions by subtopology id.
type streamsAssignment struct {
	active, standby, warmup partitionSet
}

func newStreamsAssignment() streamsAssignment {
	return streamsAssignment{partitionSet{}, partitionSet{}, partitionSet{}}
}

func (a streamsAssignment) clone() streamsAssignment {
	return streamsAssignment{a.active.clone(), a.standby.clone(), a.warmup.clone()}
}

func (a streamsAssignment) size() int { return a.active.size() + a.standby.size() + a.warmup.size() }

func (a streamsAssignment) equal(b streamsAssignment) bool {
	return a.active.equal(b.active) && a.standby.equal(b.standby) && a.warmup.equal(b.warmup)
}

func (a streamsAssignment) minus(b streamsAssignment) streamsAssignment {
	return streamsAssignment{a.active.minus(b.active), a.standby.minus(b.standby), a.warmup.minus(b.warmup)}
}

func (a streamsAssignment) intersect(b streamsAssignment) streamsAssignment {
	return streamsAssignment{a.active.intersect(b.active), a.standby.intersect(b.standby), a.warmup.intersect(b.warmup)}
}

type streamsTask struct {
	sub string
	p   int32
}

// assignStreamsTasks computes a target assignment. members maps member id
// to process id; prev is the previous target assignment.
func assignStreamsTasks(members map[string]string, tasks map[string]int32, standbys int, prev map[string]streamsAssignment) map[string]streamsAssignment {
	out := map[string]streamsAssignment{}
	ids := sortedKeys(members)
	for _, id := range ids {
		out[id] = newStreamsAssignment()
	}
	if len(ids) == 0 {
		return out
	}
	// Tasks in the order partition, subtopology: a member's share spans
	// the subtopologies (a word count's instance gets both halves of the
	// same partitions).
	var all []streamsTask
	var most int32
	for _, n := range tasks {
		most = max(most, n)
	}
	for p := int32(0); p < most; p++ {
		for _, sub := range sortedKeys(tasks) {
			if p < tasks[sub] {
				all = append(all, streamsTask{sub, p})
			}
		}
	}
	load := func(id string) int { return out[id].active.size() + out[id].standby.size() }
	procLoad := func(proc string) int {
		n := 0
		for _, id := range ids {
			if members[id] == proc {
				n += load(id)
			}
		}
		return n
	}
	// Active tasks: a balanced assignment gives every member lo tasks and
	// extra members one more; a member keeps its previous tasks within
	// that, so that a joining member finds its share free.
	lo, extra := len(all)/len(ids), len(all)%len(ids)
	room := func(id string) bool { n := out[id].active.size(); return n < lo || (n == lo && extra > 0) }
	take := func(id string, t streamsTask) {
		if out[id].active.size() == lo {
			extra--
		}
		out[id].active.add(t.sub, t.p)
	}
	var rest []streamsTask
	for _, t := range all {
		kept := false
		for _, id := range ids {
			if prev[id].active.has(t.sub, t.p) && room(id) {
				take(id, t)
				kept = true
				break
			}
		}
		if !kept {
			rest = append(rest, t)
		}
	}
	// least picks the least loaded member ok allows: fewest tasks, then
	// fewest of sub's (a subtopology spreads over the members), then the
	// least loaded process.
	least := func(sub string, ok func(id string) bool) string {
		best := ""
		for _, id := range ids {
			if !ok(id) {
				continue
			}
			if best == "" {
				best = id
				continue
			}
			c := cmp.Compare(load(id), load(best))
			if c == 0 {
				c = cmp.Compare(len(out[id].active[sub])+len(out[id].standby[sub]), len(out[best].active[sub])+len(out[best].standby[sub]))
			}
			if c == 0 {
				c = cmp.Compare(procLoad(members[id]), procLoad(members[best]))
			}
			if c < 0 {
				best = id
			}
		}
		return best
	}
	for _, t := range rest {
		take(least(t.sub, room), t)
	}
	if standbys <= 0 {
		return out
	}
	// Standby tasks: on processes other than the active one's and each
	// other's, the previous owner first.
	activeProc := map[streamsTask]string{}
	for _, id := range ids {
		for sub, ps := range out[id].active {
			for _, p := range ps {
				activeProc[streamsTask{sub, p}] = members[id]
			}
		}
	}
	for _, t := range all {
		used := []string{activeProc[t]}
		for range standbys {
			free := func(id string) bool { return !slices.Contains(used, members[id]) }
			id := ""
			for _, pid := range ids {
				if free(pid) && prev[pid].standby.has(t.sub, t.p) {
					id = pid
					break
				}
			}
			if id == "" {
				id = least(t.sub, free)
			}
			if id == "" {
				break // fewer processes than replicas
			}
			out[id].standby.add(t.sub, t.p)
			used = append(used, members[id])
		}
	}
	return out
}
