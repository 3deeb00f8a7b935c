package link

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncedConfigs are the topic configs a mirror topic takes from its source
// topic and follows (those that shape what the log holds and for how long;
// not min.insync.replicas or anything else about this cluster's replicas).
var SyncedConfigs = []string{
	"cleanup.policy",
	"compression.type",
	"delete.retention.ms",
	"max.compaction.lag.ms",
	"max.message.bytes",
	"message.timestamp.after.max.ms",
	"message.timestamp.before.max.ms",
	"message.timestamp.type",
	"min.cleanable.dirty.ratio",
	"min.compaction.lag.ms",
	"retention.bytes",
	"retention.ms",
	"segment.bytes",
	"segment.ms",
}

// syncLoop syncs the link every sync interval while this broker is the
// controller (Host.Controller), looking again every Poll and at each
// poke, until ctx ends. Its source requests are each bounded in time
// (sourceRequestTimeout), so a source broker that does not answer delays
// a sync, never the fetching, and a sync never waits for a fetch.
func (r *runner) syncLoop(ctx context.Context) {
	var next time.Time
	for ctx.Err() == nil {
		if !r.m.cfg.Host.Controller() {
			next = time.Time{} // the next time it is, it syncs at once
			r.setSyncErr(nil)
		} else if !time.Now().Before(next) {
			r.sync(ctx)
			next = time.Now().Add(r.link.SyncInterval())
		}
		wait := r.m.cfg.Poll
		if !next.IsZero() {
			wait = min(wait, time.Until(next))
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
		case <-r.syncPokec:
		case <-t.C:
		}
		t.Stop()
	}
}

// setSyncErr records the latest sync's errors (none: nil) for the link's
// status and logs each one that is new.
func (r *runner) setSyncErr(errs []error) {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	msg := strings.Join(msgs, "; ")
	r.mu.Lock()
	prev := r.syncErr
	r.syncErr = msg
	r.mu.Unlock()
	for _, m := range msgs {
		if !strings.Contains(prev, m) {
			r.m.cfg.Log.Warn("link: sync", "link", r.link.Name, "err", m)
		}
	}
}

// sync is the controller's part of a link: mirror topics created and kept
// like their sources, promotions finished, group offsets and ACLs copied.
// Its errors are the link's sync error until the next sync.
func (r *runner) sync(ctx context.Context) {
	var errs []error
	if err := r.syncTopics(ctx); err != nil {
		errs = append(errs, fmt.Errorf("syncing topics: %w", err))
	}
	errs = append(errs, r.finishPromotions(ctx))
	if r.link.Groups != "" {
		if err := r.syncGroups(ctx); err != nil {
			errs = append(errs, fmt.Errorf("syncing groups: %w", err))
		}
	}
	if err := r.syncACLs(ctx); err != nil {
		errs = append(errs, fmt.Errorf("copying ACLs: %w", err))
	}
	if ctx.Err() != nil {
		return // stopping: cut short, not failed
	}
	r.setSyncErr(errs)
}

func (r *runner) syncTopics(ctx context.Context) error {
	// A sync reads the source's metadata afresh, and leaves it for the
	// fetching too.
	src, err := r.readMetadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata of the source: %w", err)
	}
	r.mu.Lock()
	r.src, r.srcAt = src, time.Now()
	r.mu.Unlock()
	st := r.m.cfg.Store.State()
	re := st.topics[r.link.Name]
	if re == nil {
		return nil
	}
	h := r.m.cfg.Host
	var names []string
	for name := range src {
		if !strings.HasPrefix(name, "__") && re.MatchString(name) {
			names = append(names, name)
		}
	}
	errs := []error{r.noteDeletedSources(ctx, src)}
	if len(names) == 0 {
		return errors.Join(errs...)
	}
	slices.Sort(names)
	configs, err := r.sourceConfigs(ctx, names)
	if err != nil {
		return err
	}
	st = r.m.cfg.Store.State() // with what noteDeletedSources wrote
	for _, name := range names {
		want := int32(len(src[name].leaders))
		mt := st.Mirrors[name]
		if mt != nil && (mt.Link != r.link.Name || !mt.ReadOnly() || mt.SourceDeletedMs != 0) {
			continue // another link's, promoted (ours no longer), or its source gone
		}
		have, exists := h.Partitions(name)
		switch {
		case !exists && mt == nil:
			// The record first, so that the topic is never writable.
			mt = &Mirror{Link: r.link.Name, Topic: name, State: Mirroring, CreatedMs: time.Now().UnixMilli()}
			if err := r.m.cfg.Store.PutMirror(ctx, mt); err != nil {
				errs = append(errs, err)
				continue
			}
			fallthrough
		case !exists:
			if err := h.CreateTopic(ctx, name, want, configs[name]); err != nil {
				errs = append(errs, fmt.Errorf("creating mirror topic %s: %w", name, err))
				continue
			}
			r.m.cfg.Log.Info("link: mirror topic created", "link", r.link.Name, "topic", name, "partitions", want, "configs", configs[name])
		case mt == nil:
			// A topic here that never held a record (one a schema
			// registry created at its start, say) becomes the mirror;
			// any other is left alone.
			if empty, err := r.emptyTopic(ctx, name, have); err != nil || !empty || have > want {
				errs = append(errs, fmt.Errorf("topic %s exists here and is not a mirror (and not empty): not mirrored", name))
				continue
			}
			mt = &Mirror{Link: r.link.Name, Topic: name, State: Mirroring, CreatedMs: time.Now().UnixMilli()}
			if err := r.m.cfg.Store.PutMirror(ctx, mt); err != nil {
				errs = append(errs, err)
				continue
			}
			r.m.cfg.Log.Info("link: an empty topic here becomes the mirror", "link", r.link.Name, "topic", name)
			if want > have {
				if err := h.CreatePartitions(ctx, name, want); err != nil {
					errs = append(errs, fmt.Errorf("adding partitions to %s: %w", name, err))
				}
			}
		default:
			if want > have {
				if err := h.CreatePartitions(ctx, name, want); err != nil {
					errs = append(errs, fmt.Errorf("adding partitions to %s: %w", name, err))
				} else {
					r.m.cfg.Log.Info("link: partitions added", "link", r.link.Name, "topic", name, "partitions", want)
				}
			}
			cur := h.TopicConfigs(name)
			set, del := map[string]string{}, []string(nil)
			for _, k := range SyncedConfigs {
				v, ok := configs[name][k]
				old, had := cur[k]
				switch {
				case ok && (!had || old != v):
					set[k] = v
				case !ok && had:
					del = append(del, k)
				}
			}
			if len(set) > 0 || len(del) > 0 {
				if err := h.AlterTopicConfigs(ctx, name, set, del); err != nil {
					errs = append(errs, fmt.Errorf("configs of %s: %w", name, err))
				} else {
					r.m.cfg.Log.Info("link: configs synced", "link", r.link.Name, "topic", name, "set", set, "removed", del)
				}
			}
		}
	}
	r.poke()
	return errors.Join(errs...)
}

// sourceGoneSyncs is how many syncs in a row must miss a mirror's source
// topic before it counts as deleted: a topic that a metadata answer leaves
// out once (an ACL change on the source, a broker catching up) is not
// given up at once.
const sourceGoneSyncs = 3

// noteDeletedSources records the source topic id of each of the link's
// mirrors, and marks a mirror's source deleted when its topic is missing
// from the source for sourceGoneSyncs syncs in a row, or is there with
// another id (deleted and created again: other records at the same
// offsets). Mirroring such a topic stops; what was mirrored stays.
func (r *runner) noteDeletedSources(ctx context.Context, src map[string]*sourceTopic) error {
	var errs []error
	for _, mt := range r.m.cfg.Store.State().MirrorsOf(r.link.Name) {
		if !mt.ReadOnly() || mt.SourceDeletedMs != 0 {
			continue
		}
		st := src[mt.Topic]
		id := ""
		if st != nil {
			id = hex.EncodeToString(st.id[:])
			delete(r.missing, mt.Topic)
		} else {
			r.missing[mt.Topic]++
		}
		var why string
		switch {
		case st == nil && r.missing[mt.Topic] >= sourceGoneSyncs:
			why = "deleted"
		case st != nil && mt.SourceTopicID != "" && mt.SourceTopicID != id:
			why = "deleted and created again with another id"
		case st != nil && mt.SourceTopicID == "":
			c := *mt
			c.SourceTopicID = id
			errs = append(errs, r.m.cfg.Store.PutMirror(ctx, &c))
		}
		if why == "" {
			continue
		}
		c := *mt
		c.SourceDeletedMs = time.Now().UnixMilli()
		if err := r.m.cfg.Store.PutMirror(ctx, &c); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(r.missing, mt.Topic)
		r.m.cfg.Log.Warn("link: the source topic was "+why+"; mirroring it stopped, what was mirrored stays: promote it to make it writable, or delete it",
			"link", r.link.Name, "topic", mt.Topic, "source_topic_id", mt.SourceTopicID)
		r.m.Kick()
	}
	return errors.Join(errs...)
}

// emptyTopic reports whether no partition of a topic here ever held a
// record: every one ends at 0.
func (r *runner) emptyTopic(ctx context.Context, topic string, partitions int32) (bool, error) {
	hws, err := r.m.cfg.Host.HighWatermarks(ctx, topic, partitions)
	if err != nil {
		return false, err
	}
	for p := range partitions {
		if hw, ok := hws[p]; !ok || hw != 0 {
			return false, nil
		}
	}
	return true, nil
}

// sourceConfigs returns the synced configs set on each source topic.
func (r *runner) sourceConfigs(ctx context.Context, names []string) (map[string]map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, n := range names {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, n
		req.Resources = append(req.Resources, rr)
	}
	kr, err := r.askAny(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("configs of the source topics: %w", err)
	}
	out := map[string]map[string]string{}
	for _, rc := range kr.(*kmsg.DescribeConfigsResponse).Resources {
		if err := kerr.ErrorForCode(rc.ErrorCode); err != nil {
			return nil, fmt.Errorf("configs of source topic %s: %w", rc.ResourceName, err)
		}
		m := map[string]string{}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil && slices.Contains(SyncedConfigs, c.Name) {
				m[c.Name] = *c.Value
			}
		}
		out[rc.ResourceName] = m
	}
	return out, nil
}

// finishPromotions marks promoted the topics whose every partition reached
// its target.
func (r *runner) finishPromotions(ctx context.Context) error {
	var errs []error
	for _, mt := range r.m.cfg.Store.State().MirrorsOf(r.link.Name) {
		if mt.State != Promoting {
			continue
		}
		if _, err := r.m.finishPromotion(ctx, mt); err != nil {
			errs = append(errs, fmt.Errorf("promoting %s: %w", mt.Topic, err))
		}
	}
	return errors.Join(errs...)
}

// syncGroups copies the committed offsets of the source's groups that
// match the link's groups pattern, for its mirror topics, verbatim: the
// offsets are the same in both clusters. A group's offsets are copied only
// while nothing else commits them here: once the group commits on this
// cluster (its consumers moved), the link leaves it alone for good.
func (r *runner) syncGroups(ctx context.Context) error {
	st := r.m.cfg.Store.State()
	re := st.groups[r.link.Name]
	if re == nil {
		return nil
	}
	mirrored := map[string]bool{}
	for _, mt := range st.MirrorsOf(r.link.Name) {
		if mt.ReadOnly() {
			mirrored[mt.Topic] = true
		}
	}
	// Every source broker lists the groups it coordinates: one that does
	// not answer in time leaves its groups out of this sync, not the
	// others'.
	adm := kadm.NewClient(r.cl)
	lctx, cancel := context.WithTimeout(ctx, r.sourceTimeout)
	listed, err := adm.ListGroups(lctx)
	cancel()
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("listing the source's groups: %w", err))
	}
	var names []string
	for _, g := range listed.Groups() {
		if !re.MatchString(g) {
			continue
		}
		if prev := st.Groups[r.link.Name][g]; prev != nil && prev.TakenOverMs != 0 {
			continue
		}
		names = append(names, g)
	}
	if len(names) == 0 {
		return errors.Join(errs...)
	}
	// One OffsetFetch per coordinator, at once.
	fctx, cancel := context.WithTimeout(ctx, r.sourceTimeout)
	offsets := adm.FetchManyOffsets(fctx, names...)
	cancel()
	for _, g := range names {
		prev := st.Groups[r.link.Name][g]
		fetched, ok := offsets[g]
		if !ok || fetched.Err != nil {
			err := fetched.Err
			if !ok {
				err = errors.New("not answered")
			}
			errs = append(errs, fmt.Errorf("offsets of source group %s: %w", g, err))
			continue
		}
		want := map[string]map[int32]int64{}
		fetched.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && mirrored[o.Topic] && o.At >= 0 {
				if want[o.Topic] == nil {
					want[o.Topic] = map[int32]int64{}
				}
				want[o.Topic][o.Partition] = o.At
			}
		})
		if len(want) == 0 {
			continue
		}
		var last map[string]map[int32]int64
		if prev != nil {
			last = prev.Offsets
		}
		if err := r.commitGroup(ctx, g, want, last); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// commitGroup commits want for group g here unless the group committed
// here itself since the link last wrote last.
func (r *runner) commitGroup(ctx context.Context, g string, want, last map[string]map[int32]int64) error {
	h := r.m.cfg.Host
	now := time.Now().UnixMilli()
	here, err := h.CommittedOffsets(ctx, g)
	if err != nil {
		return fmt.Errorf("offsets of group %s here: %w", g, err)
	}
	takenOver := func() error {
		r.m.cfg.Log.Info("link: group committed here: no longer synced", "link", r.link.Name, "group", g)
		return r.m.cfg.Store.PutGroup(ctx, &GroupSync{Link: r.link.Name, Group: g, Offsets: last, TakenOverMs: now})
	}
	for t, ps := range here {
		for p, o := range ps {
			if _, ours := want[t]; !ours {
				continue
			}
			if lo, ok := last[t][p]; !ok || lo != o {
				return takenOver()
			}
		}
	}
	if sameOffsets(want, last) {
		return nil
	}
	if err := h.CommitOffsets(ctx, g, want); err != nil {
		if errors.Is(err, ErrGroupActive) {
			return takenOver()
		}
		return fmt.Errorf("committing group %s: %w", g, err)
	}
	return r.m.cfg.Store.PutGroup(ctx, &GroupSync{Link: r.link.Name, Group: g, Offsets: want, SyncedMs: now})
}

func sameOffsets(a, b map[string]map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !maps.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// syncACLs copies the source's literal ACLs on the link's topics (those
// matching its topics pattern) and groups (its groups pattern) here, once
// each: bindings are added, never removed (a binding removed on the source
// stays here; Kafka's prefixed and wildcard bindings are not copied). A
// source without an authorizer, or this cluster without one, has nothing
// to copy. SCRAM credentials cannot be read from a source at all.
func (r *runner) syncACLs(ctx context.Context) error {
	st := r.m.cfg.Store.State()
	topics, groups := st.topics[r.link.Name], st.groups[r.link.Name]
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny // literal and prefixed
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	kr, err := r.askAny(ctx, req)
	if err != nil {
		return err
	}
	resp := kr.(*kmsg.DescribeACLsResponse)
	if resp.ErrorCode == kerr.SecurityDisabled.Code {
		return nil
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	// A prefixed binding is copied when it covers one of the link's mirror
	// topics or synced groups: it then grants here what it granted there
	// on them (and on any other name with that prefix, as on the source).
	var mirrored, synced []string
	for _, mt := range st.MirrorsOf(r.link.Name) {
		mirrored = append(mirrored, mt.Topic)
	}
	for g := range st.Groups[r.link.Name] {
		synced = append(synced, g)
	}
	covers := func(names []string, prefix string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
	}
	var add []kmsg.CreateACLsRequestCreation
	for _, res := range resp.Resources {
		prefixed := res.ResourcePatternType == kmsg.ACLResourcePatternTypePrefixed
		switch {
		case res.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral && !prefixed:
			continue
		case res.ResourceType == kmsg.ACLResourceTypeTopic && !prefixed && topics != nil && topics.MatchString(res.ResourceName):
		case res.ResourceType == kmsg.ACLResourceTypeGroup && !prefixed && groups != nil && groups.MatchString(res.ResourceName):
		case res.ResourceType == kmsg.ACLResourceTypeTopic && prefixed && covers(mirrored, res.ResourceName):
		case res.ResourceType == kmsg.ACLResourceTypeGroup && prefixed && covers(synced, res.ResourceName):
		default:
			continue
		}
		for _, a := range res.ACLs {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = res.ResourceType, res.ResourceName, res.ResourcePatternType
			c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, a.Operation, a.PermissionType
			key := fmt.Sprintf("%v|%v|%s|%s|%s|%v|%v", c.ResourceType, c.ResourcePatternType, c.ResourceName, c.Principal, c.Host, c.Operation, c.PermissionType)
			r.mu.Lock()
			done := r.aclsCopied[key]
			r.mu.Unlock()
			if !done {
				add = append(add, c)
			}
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := r.m.cfg.Host.CreateACLs(ctx, add); err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			return nil
		}
		return err
	}
	r.mu.Lock()
	for _, c := range add {
		r.aclsCopied[fmt.Sprintf("%v|%v|%s|%s|%s|%v|%v", c.ResourceType, c.ResourcePatternType, c.ResourceName, c.Principal, c.Host, c.Operation, c.PermissionType)] = true
	}
	r.mu.Unlock()
	r.m.cfg.Log.Info("link: ACLs copied", "link", r.link.Name, "bindings", len(add))
	return nil
}
