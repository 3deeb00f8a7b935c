package admin

// The console's actions: server-rendered forms that POST with a CSRF token.
// Each runs the Kafka request the equivalent Kafka tool would send through
// broker.Execute (the handler a client's request gets; the coordinator or
// leader in a cluster), after checking the ACLs Kafka requires for it:
//
//	reset a group's offsets   READ on the GROUP, READ on each TOPIC   OffsetCommit
//	delete a group            DELETE on the GROUP                     DeleteGroups
//	create a topic            CREATE on the CLUSTER or the TOPIC      CreateTopics
//	set/delete a topic config ALTER_CONFIGS on the TOPIC              IncrementalAlterConfigs
//	produce a test record     WRITE on the TOPIC                      Produce (acks=all)
//	delete records            DELETE on the TOPIC                     DeleteRecords
//
// An offset reset is previewed first (GET, a dry run that changes nothing:
// each partition's current → new offset), then confirmed with a POST that
// commits exactly the previewed offsets. As kafka-consumer-groups, it is
// refused for a group with active members. Every action is logged with its
// principal and counted in gregor_admin_actions_total{action,result}.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// actionTimeout bounds one action's Kafka requests.
const actionTimeout = 30 * time.Second

// Action results, the result label of gregor_admin_actions_total.
const (
	resultOK      = "ok"
	resultError   = "error"
	resultDenied  = "denied"
	resultRefused = "refused"
)

// outcome is what an action did, rendered by result.html.
type outcome struct {
	Action  string
	Status  int
	Result  string // resultOK, …
	Message string
	Rows    []resetRow
	Back    string // the page to go back to
	Attrs   []any  // logged
}

func failed(status int, result, format string, args ...any) outcome {
	return outcome{Status: status, Result: result, Message: fmt.Sprintf(format, args...)}
}

// kafkaFailure is the outcome of a Kafka error code.
func kafkaFailure(code int16, msg *string) outcome {
	status := http.StatusBadRequest
	result := resultError
	switch code {
	case kerr.NonEmptyGroup.Code, kerr.TopicAlreadyExists.Code:
		status, result = http.StatusConflict, resultRefused
	case kerr.UnknownTopicOrPartition.Code, kerr.GroupIDNotFound.Code:
		status = http.StatusNotFound
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code:
		status, result = http.StatusForbidden, resultDenied
	}
	text := kerr.ErrorForCode(code).Error()
	if msg != nil && *msg != "" {
		text += ": " + *msg
	}
	return outcome{Status: status, Result: result, Message: text}
}

// act runs a POSTed action: the CSRF check, then fn; logs and counts the
// outcome and renders it.
func (s *Server) act(action string, fn func(ctx context.Context, r *http.Request, c broker.Caller) outcome) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := callerOf(r)
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		var o outcome
		if !s.checkCSRF(r, c) {
			o = failed(http.StatusForbidden, resultDenied, "missing or invalid CSRF token: submit the form from the console")
		} else {
			ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
			o = fn(ctx, r, c)
			cancel()
		}
		if o.Status == 0 {
			o.Status, o.Result = http.StatusOK, resultOK
		}
		o.Action = action
		s.actions.WithLabelValues(action, o.Result).Inc()
		attrs := append([]any{"action", action, "principal", c.Principal, "host", c.Host, "result", o.Result, "message", o.Message}, o.Attrs...)
		s.log.Info("admin console action", attrs...)
		s.renderStatus(w, r, o.Status, "result.html", actionTitles[action], o)
	}
}

var actionTitles = map[string]string{
	"reset_offsets":  "Reset offsets",
	"delete_group":   "Delete group",
	"create_topic":   "Create topic",
	"alter_config":   "Change topic config",
	"produce":        "Produce a record",
	"delete_records": "Delete records",
}

func (s *Server) registerActions(mux *http.ServeMux) {
	mux.HandleFunc("GET /groups/{group}/reset", s.resetPreview)
	mux.HandleFunc("POST /groups/{group}/reset", s.act("reset_offsets", s.resetOffsets))
	mux.HandleFunc("POST /groups/{group}/delete", s.act("delete_group", s.deleteGroup))
	mux.HandleFunc("POST /topics", s.act("create_topic", s.createTopic))
	mux.HandleFunc("POST /topics/{topic}/config", s.act("alter_config", s.alterConfig))
	mux.HandleFunc("POST /topics/{topic}/produce", s.act("produce", s.produce))
	mux.HandleFunc("POST /topics/{topic}/delete-records", s.act("delete_records", s.deleteRecords))
}

// ---- Offset reset ----

// resetRow is one partition of an offset reset.
type resetRow struct {
	Topic      string
	Partition  int32
	Current    int64 // -1: no committed offset
	New        int64
	Start, End int64 // log start offset and high watermark
}

// resetPage is the preview.
type resetPage struct {
	Group                             string
	Topic, Partition, Strategy, Value string
	Rows                              []resetRow
}

// resetStrategies are kafka-consumer-groups' --to-earliest, --to-latest,
// --to-datetime (here a timestamp in ms or RFC 3339), --to-offset and
// --shift-by.
var resetStrategies = []string{"earliest", "latest", "timestamp", "offset", "shift"}

// resetPreview is the dry run: the plan, and a form to confirm it.
func (s *Server) resetPreview(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	q := r.URL.Query()
	p := resetPage{Group: r.PathValue("group"), Topic: q.Get("topic"), Partition: q.Get("partition"), Strategy: q.Get("strategy"), Value: q.Get("value")}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	rows, o := s.resetPlan(ctx, c, p)
	if o.Status != 0 {
		o.Action, o.Back = "reset_offsets", "/groups/"+p.Group
		s.renderStatus(w, r, o.Status, "result.html", "Reset offsets", o)
		return
	}
	p.Rows = rows
	s.renderStatus(w, r, http.StatusOK, "reset.html", "Reset offsets of "+p.Group+" (dry run)", p)
}

// resetPlan computes the new offsets; a non-zero outcome status is why not.
func (s *Server) resetPlan(ctx context.Context, c broker.Caller, p resetPage) ([]resetRow, outcome) {
	if !slices.Contains(resetStrategies, p.Strategy) {
		return nil, failed(http.StatusBadRequest, resultError, "strategy %q: want one of %s", p.Strategy, strings.Join(resetStrategies, ", "))
	}
	var value int64
	if p.Strategy == "timestamp" || p.Strategy == "offset" || p.Strategy == "shift" {
		var err error
		if value, err = parseResetValue(p.Strategy, p.Value); err != nil {
			return nil, failed(http.StatusBadRequest, resultError, "%v", err)
		}
	}
	if o := s.groupResettable(ctx, c, p.Group); o.Status != 0 {
		return nil, o
	}
	current, o := s.committedOffsets(ctx, c, p.Group)
	if o.Status != 0 {
		return nil, o
	}
	var parts []broker.ClusterPartition
	if p.Topic == "" {
		for tp := range current {
			parts = append(parts, broker.ClusterPartition{Topic: tp.topic, Partition: tp.partition})
		}
	} else {
		for _, cp := range s.b.ClusterInfo().Partitions {
			if cp.Topic == p.Topic && (p.Partition == "" || strconv.Itoa(int(cp.Partition)) == p.Partition) {
				parts = append(parts, cp)
			}
		}
		if len(parts) == 0 {
			return nil, failed(http.StatusNotFound, resultError, "topic %s has no partition %s", p.Topic, p.Partition)
		}
	}
	if len(parts) == 0 {
		return nil, failed(http.StatusBadRequest, resultError, "group %s has no committed offsets: name a topic", p.Group)
	}
	slices.SortFunc(parts, func(x, y broker.ClusterPartition) int {
		if x.Topic != y.Topic {
			return strings.Compare(x.Topic, y.Topic)
		}
		return int(x.Partition - y.Partition)
	})
	for _, t := range topicsOf(parts) {
		if !s.allowed(c, broker.ACLRead, broker.ResourceTopic, t) {
			return nil, failed(http.StatusForbidden, resultDenied, "%s is not authorized: READ on topic %s is needed", c.Principal, t)
		}
	}
	var rows []resetRow
	for _, cp := range parts {
		row := resetRow{Topic: cp.Topic, Partition: cp.Partition, Current: -1}
		if off, ok := current[topicPartition{cp.Topic, cp.Partition}]; ok {
			row.Current = off
		}
		var err error
		if row.Start, err = s.listOffset(ctx, c, cp.Topic, cp.Partition, -2); err == nil {
			row.End, err = s.listOffset(ctx, c, cp.Topic, cp.Partition, -1)
		}
		if err != nil {
			return nil, failed(http.StatusBadGateway, resultError, "%s-%d: listing offsets: %v", cp.Topic, cp.Partition, err)
		}
		clamp := func(o int64) int64 { return min(max(o, row.Start), row.End) }
		switch p.Strategy {
		case "earliest":
			row.New = row.Start
		case "latest":
			row.New = row.End
		case "offset":
			row.New = clamp(value)
		case "shift":
			if row.Current < 0 {
				return nil, failed(http.StatusBadRequest, resultError, "cannot shift the offset of %s-%d: the group has no committed offset for it", cp.Topic, cp.Partition)
			}
			row.New = clamp(row.Current + value)
		case "timestamp":
			off, err := s.listOffset(ctx, c, cp.Topic, cp.Partition, value)
			if err != nil {
				return nil, failed(http.StatusBadGateway, resultError, "%s-%d: listing offsets: %v", cp.Topic, cp.Partition, err)
			}
			if off < 0 { // no record at or after the time
				off = row.End
			}
			row.New = off
		}
		rows = append(rows, row)
	}
	return rows, outcome{}
}

func parseResetValue(strategy, v string) (int64, error) {
	v = strings.TrimSpace(v)
	if strategy == "timestamp" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t.UnixMilli(), nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("timestamp %q: want milliseconds since the epoch or RFC 3339 (2024-05-01T12:00:00Z)", v)
		}
		return n, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want an integer", strategy, v)
	}
	if strategy == "offset" && n < 0 {
		return 0, fmt.Errorf("offset %d: want 0 or more", n)
	}
	return n, nil
}

func topicsOf(parts []broker.ClusterPartition) []string {
	var ts []string
	for _, p := range parts {
		if !slices.Contains(ts, p.Topic) {
			ts = append(ts, p.Topic)
		}
	}
	return ts
}

type topicPartition struct {
	topic     string
	partition int32
}

// groupResettable checks READ on the group and that it has no active
// members (kafka-consumer-groups: "Assignments can only be reset if the
// group is inactive").
func (s *Server) groupResettable(ctx context.Context, c broker.Caller, group string) outcome {
	if !s.allowed(c, broker.ACLRead, broker.ResourceGroup, group) {
		return failed(http.StatusForbidden, resultDenied, "%s is not authorized: READ on group %s is needed", c.Principal, group)
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return failed(http.StatusBadGateway, resultError, "describing group %s: %v", group, err)
	}
	resp := kresp.(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 {
		return failed(http.StatusBadGateway, resultError, "describing group %s: no answer", group)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return kafkaFailure(g.ErrorCode, nil)
	}
	if len(g.Members) > 0 || (g.State != "Empty" && g.State != "Dead") {
		return failed(http.StatusConflict, resultRefused,
			"group %s has %d active member(s) (state %s): offsets can only be reset while the group is inactive, as kafka-consumer-groups requires; stop its consumers first",
			group, len(g.Members), g.State)
	}
	return outcome{}
}

// committedOffsets fetches the group's committed offsets (OffsetFetch for
// all topics).
func (s *Server) committedOffsets(ctx context.Context, c broker.Caller, group string) (map[topicPartition]int64, outcome) {
	// Both forms are filled (v0-7: Group; v8+: Groups), as the version is
	// the handler's, or the peer's when forwarded; nil topics: all.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return nil, failed(http.StatusBadGateway, resultError, "fetching the offsets of %s: %v", group, err)
	}
	resp := kresp.(*kmsg.OffsetFetchResponse)
	out := map[topicPartition]int64{}
	add := func(topic string, p int32, offset int64, code int16) {
		if code == 0 && offset >= 0 {
			out[topicPartition{topic, p}] = offset
		}
	}
	if resp.GetVersion() >= 8 {
		if len(resp.Groups) != 1 {
			return nil, failed(http.StatusBadGateway, resultError, "fetching the offsets of %s: no answer", group)
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return nil, kafkaFailure(g.ErrorCode, nil)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				add(t.Topic, p.Partition, p.Offset, p.ErrorCode)
			}
		}
		return out, outcome{}
	}
	if resp.ErrorCode != 0 {
		return nil, kafkaFailure(resp.ErrorCode, nil)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(t.Topic, p.Partition, p.Offset, p.ErrorCode)
		}
	}
	return out, outcome{}
}

// listOffset is ListOffsets for one partition: timestamp -2 earliest, -1
// latest (the high watermark), else the first offset at or after it (-1
// when none).
func (s *Server) listOffset(ctx context.Context, c broker.Caller, topic string, partition int32, timestamp int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, timestamp, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("no answer for the partition")
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return 0, kerr.ErrorForCode(code)
	}
	return resp.Topics[0].Partitions[0].Offset, nil
}

// resetOffsets commits the previewed offsets, given as set=topic:partition:offset.
func (s *Server) resetOffsets(ctx context.Context, r *http.Request, c broker.Caller) outcome {
	group := r.PathValue("group")
	back := "/groups/" + group
	var rows []resetRow
	for _, v := range r.PostForm["set"] {
		i := strings.LastIndexByte(v, ':')
		j := strings.LastIndexByte(v[:max(i, 0)], ':')
		if j <= 0 {
			return withBack(failed(http.StatusBadRequest, resultError, "bad offset %q: want topic:partition:offset", v), back)
		}
		p, err1 := strconv.ParseInt(v[j+1:i], 10, 32)
		off, err2 := strconv.ParseInt(v[i+1:], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 {
			return withBack(failed(http.StatusBadRequest, resultError, "bad offset %q: want topic:partition:offset", v), back)
		}
		rows = append(rows, resetRow{Topic: v[:j], Partition: int32(p), New: off, Current: -1})
	}
	if len(rows) == 0 {
		return withBack(failed(http.StatusBadRequest, resultError, "no offsets to commit: start from the preview"), back)
	}
	if o := s.groupResettable(ctx, c, group); o.Status != 0 {
		return withBack(o, back)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	for _, row := range rows {
		if !s.allowed(c, broker.ACLRead, broker.ResourceTopic, row.Topic) {
			return withBack(failed(http.StatusForbidden, resultDenied, "%s is not authorized: READ on topic %s is needed", c.Principal, row.Topic), back)
		}
		i := slices.IndexFunc(req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return t.Topic == row.Topic })
		if i < 0 {
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = row.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = row.Partition, row.New
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return withBack(failed(http.StatusBadGateway, resultError, "committing offsets: %v", err), back)
	}
	for _, t := range kresp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				o := kafkaFailure(p.ErrorCode, nil)
				o.Message = fmt.Sprintf("%s-%d: %s", t.Topic, p.Partition, o.Message)
				return withBack(o, back)
			}
		}
	}
	var desc []string
	for _, row := range rows {
		desc = append(desc, fmt.Sprintf("%s-%d=%d", row.Topic, row.Partition, row.New))
	}
	return outcome{Message: fmt.Sprintf("Committed %d offset(s) for group %s.", len(rows), group), Rows: rows, Back: back,
		Attrs: []any{"group", group, "offsets", strings.Join(desc, ",")}}
}

func withBack(o outcome, back string) outcome {
	o.Back = back
	return o
}

// ---- Groups ----

func (s *Server) deleteGroup(ctx context.Context, r *http.Request, c broker.Caller) outcome {
	group := r.PathValue("group")
	if !s.allowed(c, broker.ACLDelete, broker.ResourceGroup, group) {
		return withBack(failed(http.StatusForbidden, resultDenied, "%s is not authorized: DELETE on group %s is needed", c.Principal, group), "/groups/"+group)
	}
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return failed(http.StatusBadGateway, resultError, "deleting group %s: %v", group, err)
	}
	for _, g := range kresp.(*kmsg.DeleteGroupsResponse).Groups {
		if g.ErrorCode != 0 {
			o := withBack(kafkaFailure(g.ErrorCode, nil), "/groups/"+group)
			if g.ErrorCode == kerr.NonEmptyGroup.Code {
				o.Message = "group " + group + " has active members: stop its consumers first (" + o.Message + ")"
			}
			return o
		}
	}
	return outcome{Message: "Deleted group " + group + ".", Back: "/", Attrs: []any{"group", group}}
}

// ---- Topics ----

// parseConfigs reads name=value lines.
func parseConfigs(text string) ([][2]string, error) {
	var out [][2]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("config line %q: want name=value", line)
		}
		out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out, nil
}

func (s *Server) createTopic(ctx context.Context, r *http.Request, c broker.Caller) outcome {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" {
		return failed(http.StatusBadRequest, resultError, "a topic needs a name")
	}
	if !s.allowed(c, broker.ACLCreate, broker.ResourceCluster, broker.ClusterResourceName) && !s.allowed(c, broker.ACLCreate, broker.ResourceTopic, name) {
		return failed(http.StatusForbidden, resultDenied, "%s is not authorized: CREATE on the cluster or on topic %s is needed", c.Principal, name)
	}
	intField := func(k string) (int64, error) {
		v := strings.TrimSpace(r.PostFormValue(k))
		if v == "" {
			return -1, nil // the broker's default
		}
		return strconv.ParseInt(v, 10, 32)
	}
	parts, err1 := intField("partitions")
	rf, err2 := intField("replication_factor")
	if err1 != nil || err2 != nil {
		return failed(http.StatusBadRequest, resultError, "partitions and replication factor must be integers (or empty for the broker's default)")
	}
	cfgs, err := parseConfigs(r.PostFormValue("configs"))
	if err != nil {
		return failed(http.StatusBadRequest, resultError, "%v", err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(actionTimeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, int32(parts), int16(rf)
	for _, kv := range cfgs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = kv[0], kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return failed(http.StatusBadGateway, resultError, "creating topic %s: %v", name, err)
	}
	for _, rt := range kresp.(*kmsg.CreateTopicsResponse).Topics {
		if rt.ErrorCode != 0 {
			return withBack(kafkaFailure(rt.ErrorCode, rt.ErrorMessage), "/")
		}
	}
	return outcome{Message: "Created topic " + name + ".", Back: "/topics/" + name,
		Attrs: []any{"topic", name, "partitions", parts, "replication_factor", rf, "configs", len(cfgs)}}
}

func (s *Server) alterConfig(ctx context.Context, r *http.Request, c broker.Caller) outcome {
	topic := r.PathValue("topic")
	back := "/topics/" + topic
	if !s.allowed(c, broker.ACLAlterConfigs, broker.ResourceTopic, topic) {
		return withBack(failed(http.StatusForbidden, resultDenied, "%s is not authorized: ALTER_CONFIGS on topic %s is needed", c.Principal, topic), back)
	}
	name, value := strings.TrimSpace(r.PostFormValue("name")), strings.TrimSpace(r.PostFormValue("value"))
	if name == "" {
		return withBack(failed(http.StatusBadRequest, resultError, "which config? name is empty"), back)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name = name
	switch r.PostFormValue("op") {
	case "", "set":
		cfg.Op, cfg.Value = kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	case "delete":
		cfg.Op = kmsg.IncrementalAlterConfigOpDelete
	default:
		return withBack(failed(http.StatusBadRequest, resultError, "op %q: want set or delete", r.PostFormValue("op")), back)
	}
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return withBack(failed(http.StatusBadGateway, resultError, "altering %s: %v", topic, err), back)
	}
	for _, rr := range kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if rr.ErrorCode != 0 {
			return withBack(kafkaFailure(rr.ErrorCode, rr.ErrorMessage), back)
		}
	}
	msg := fmt.Sprintf("Set %s=%s on topic %s.", name, value, topic)
	if cfg.Op == kmsg.IncrementalAlterConfigOpDelete {
		msg = fmt.Sprintf("Removed the override of %s on topic %s.", name, topic)
	}
	return outcome{Message: msg, Back: back, Attrs: []any{"topic", topic, "config", name, "value", value, "op", cfg.Op.String()}}
}

// produce writes one record with acks=all.
func (s *Server) produce(ctx context.Context, r *http.Request, c broker.Caller) outcome {
	topic := r.PathValue("topic")
	back := "/topics/" + topic
	if !s.allowed(c, broker.ACLWrite, broker.ResourceTopic, topic) {
		return withBack(failed(http.StatusForbidden, resultDenied, "%s is not authorized: WRITE on topic %s is needed", c.Principal, topic), back)
	}
	rec := &kgo.Record{Topic: topic, Value: []byte(r.PostFormValue("value"))}
	if k := r.PostFormValue("key"); k != "" {
		rec.Key = []byte(k)
	}
	if r.PostFormValue("null_value") != "" {
		rec.Value = nil
	}
	hdrs, err := parseConfigs(r.PostFormValue("headers"))
	if err != nil {
		return withBack(failed(http.StatusBadRequest, resultError, "headers: %v", err), back)
	}
	for _, h := range hdrs {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
	}
	n := 0
	for _, cp := range s.b.ClusterInfo().Partitions {
		if cp.Topic == topic {
			n++
		}
	}
	if n == 0 {
		return withBack(failed(http.StatusNotFound, resultError, "unknown topic %s", topic), back)
	}
	part := int32(0)
	if v := strings.TrimSpace(r.PostFormValue("partition")); v != "" {
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil || p < 0 || int(p) >= n {
			return withBack(failed(http.StatusBadRequest, resultError, "partition %q: topic %s has partitions 0 to %d", v, topic, n-1), back)
		}
		part = int32(p)
	} else if rec.Key != nil {
		// The Java client's default partitioner: murmur2 of the key.
		part = int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(rec, n))
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, int32(actionTimeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, recordBatch(rec, s.now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return withBack(failed(http.StatusBadGateway, resultError, "producing to %s: %v", topic, err), back)
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return withBack(failed(http.StatusBadGateway, resultError, "producing to %s: no answer", topic), back)
	}
	pr := resp.Topics[0].Partitions[0]
	if pr.ErrorCode != 0 {
		return withBack(kafkaFailure(pr.ErrorCode, pr.ErrorMessage), back)
	}
	return outcome{Message: fmt.Sprintf("Produced to %s-%d at offset %d.", topic, part, pr.BaseOffset), Back: fmt.Sprintf("/topics/%s/%d?offset=%d", topic, part, pr.BaseOffset),
		Attrs: []any{"topic", topic, "partition", part, "offset", pr.BaseOffset}}
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// recordBatch encodes one record as an uncompressed, non-idempotent record
// batch (magic 2), as a producer sends it.
func recordBatch(rec *kgo.Record, nowMs int64) []byte {
	kr := kmsg.Record{Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	enc := kr.AppendTo(nil)[1:] // Length 0 encodes as one byte
	body := binary.AppendVarint(nil, int64(len(enc)))
	body = append(body, enc...)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: nowMs, MaxTimestamp: nowMs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32c))
	return raw
}

func (s *Server) deleteRecords(ctx context.Context, r *http.Request, c broker.Caller) outcome {
	topic := r.PathValue("topic")
	back := "/topics/" + topic
	if !s.allowed(c, broker.ACLDelete, broker.ResourceTopic, topic) {
		return withBack(failed(http.StatusForbidden, resultDenied, "%s is not authorized: DELETE on topic %s is needed", c.Principal, topic), back)
	}
	p, err1 := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("partition")), 10, 32)
	off, err2 := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("offset")), 10, 64)
	if err1 != nil || err2 != nil || p < 0 || off < -1 {
		return withBack(failed(http.StatusBadRequest, resultError, "want a partition and an offset (-1: the high watermark)"), back)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(actionTimeout / time.Millisecond)
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = int32(p), off
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := s.b.Execute(ctx, c, req)
	if err != nil {
		return withBack(failed(http.StatusBadGateway, resultError, "deleting records of %s: %v", topic, err), back)
	}
	resp := kresp.(*kmsg.DeleteRecordsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return withBack(failed(http.StatusBadGateway, resultError, "deleting records of %s: no answer", topic), back)
	}
	dp := resp.Topics[0].Partitions[0]
	if dp.ErrorCode != 0 {
		return withBack(kafkaFailure(dp.ErrorCode, nil), back)
	}
	return outcome{Message: fmt.Sprintf("Deleted the records of %s-%d below offset %d (log start offset now %d).", topic, p, dp.LowWatermark, dp.LowWatermark), Back: back,
		Attrs: []any{"topic", topic, "partition", p, "low_watermark", dp.LowWatermark}}
}
