package broker

// Fault injection, for testing how clients cope with a misbehaving broker.
//
// A Fault matches requests of one API key, optionally only those naming a
// topic (and a partition) or only those of one client id. A matching request is delayed by Latency, then
// either closes its connection (DropConnection), is answered with ErrorCode
// without being executed, or (neither) is handled normally. A fault applies
// to its next Count matching requests, or to every one until ClearFaults
// when Count is 0.
//
// An injected error is encoded in the API's own response: the response
// mirrors the request's topics, partitions, groups or keys, and the error
// code is set at the deepest level that carries one (a Produce partition, a
// Metadata topic, a JoinGroup response), with -1 in the offset fields as
// Kafka answers errors. Nothing of the request is executed, so a Produce
// answered NOT_LEADER_OR_FOLLOWER appended nothing and the client's retry
// does not duplicate it. Every partition of a matched request gets the
// error, not only the one named by the fault.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fault describes requests to disturb and how.
type Fault struct {
	// APIKey is the request kind, e.g. int16(kmsg.Produce).
	APIKey int16 `json:"api_key"`
	// Topic, when set, restricts the fault to requests naming this topic.
	Topic string `json:"topic,omitempty"`
	// Partition, with Topic, restricts it to requests naming this
	// partition of the topic; -1 (or no Topic) means any.
	Partition int32 `json:"partition"`
	// ClientID, when set, restricts the fault to requests whose header
	// carries this client id (a follower's fetcher is
	// "gregor-replica-<node id>").
	ClientID string `json:"client_id,omitempty"`
	// Count is how many matching requests the fault applies to; 0 means
	// all of them until ClearFaults.
	Count int `json:"count"`
	// ErrorCode is the Kafka error code to answer with (kerr codes); 0
	// handles the request normally (after Latency).
	ErrorCode int16 `json:"error_code,omitempty"`
	// Latency delays the request before it is answered or handled.
	Latency time.Duration `json:"latency,omitempty"`
	// DropConnection closes the connection instead of answering.
	DropConnection bool `json:"drop_connection,omitempty"`
}

// FaultStatus is an active fault and how many requests it still applies to
// (-1: unlimited).
type FaultStatus struct {
	ID int `json:"id"`
	Fault
	Remaining int `json:"remaining"`
	Hits      int `json:"hits"`
}

// ErrUnknownAPIKey is returned by InjectFault for an API key Gregor does not
// serve.
var ErrUnknownAPIKey = errors.New("unknown api key")

// ErrNoErrorField is returned by InjectFault when an error code is asked
// for an API whose response has nowhere to carry it.
var ErrNoErrorField = errors.New("the response of this api has no error code")

type faultSet struct {
	n      atomic.Int32 // len(active), read without the lock on every request
	mu     sync.Mutex
	nextID int
	active []*FaultStatus
}

// InjectFault adds a fault and returns its id.
//
// It returns ErrUnknownAPIKey for an API key the broker does not handle,
// ErrNoErrorField when ErrorCode is set for an API whose response carries
// no error code, and an error for an unknown error code.
func (b *Broker) InjectFault(f Fault) (int, error) {
	if _, ok := handlers[f.APIKey]; !ok {
		return 0, fmt.Errorf("%w %d", ErrUnknownAPIKey, f.APIKey)
	}
	if f.ErrorCode != 0 {
		if kerr.ErrorForCode(f.ErrorCode) == kerr.UnknownServerError && f.ErrorCode != kerr.UnknownServerError.Code {
			return 0, fmt.Errorf("unknown error code %d", f.ErrorCode)
		}
		req := kmsg.RequestForKey(f.APIKey)
		if req == nil || !hasErrorCode(reflect.TypeOf(req.ResponseKind()).Elem(), 0) {
			return 0, fmt.Errorf("%w: %s", ErrNoErrorField, kmsg.NameForKey(f.APIKey))
		}
	}
	if f.Topic == "" || f.Partition < -1 {
		f.Partition = -1
	}
	fs := &b.faults
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.nextID++
	st := &FaultStatus{ID: fs.nextID, Fault: f, Remaining: f.Count}
	if f.Count <= 0 {
		st.Remaining = -1
	}
	fs.active = append(fs.active, st)
	fs.n.Store(int32(len(fs.active)))
	b.log.Info("fault injected", "id", st.ID, "api", kmsg.NameForKey(f.APIKey), "topic", f.Topic, "partition", f.Partition, "client_id", f.ClientID,
		"count", f.Count, "error", f.ErrorCode, "latency", f.Latency, "drop", f.DropConnection)
	return st.ID, nil
}

// ClearFaults removes every fault; with ids, only those.
func (b *Broker) ClearFaults(ids ...int) {
	fs := &b.faults
	fs.mu.Lock()
	defer fs.mu.Unlock()
	defer func() { fs.n.Store(int32(len(fs.active))) }()
	if len(ids) == 0 {
		fs.active = nil
		return
	}
	for _, id := range ids {
		for i, st := range fs.active {
			if st.ID == id {
				fs.active = append(fs.active[:i:i], fs.active[i+1:]...)
				break
			}
		}
	}
}

// Faults returns the active faults.
func (b *Broker) Faults() []FaultStatus {
	fs := &b.faults
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]FaultStatus, 0, len(fs.active))
	for _, st := range fs.active {
		out = append(out, *st)
	}
	return out
}

// ForceRebalance makes a group rebalance as if a member had joined: every
// member learns it from its next heartbeat (REBALANCE_IN_PROGRESS) and
// rejoins. See coordinator.ForceRebalance for its errors.
func (b *Broker) ForceRebalance(group string) error {
	return b.groups.ForceRebalance(group)
}

// injectFault is called by dispatch for every decoded request: when a fault
// matches, it returns an error (drop the connection) or replaces h's
// function.
func (b *Broker) injectFault(h *handler, r *request) error {
	fs := &b.faults
	if fs.n.Load() == 0 {
		return nil
	}
	fs.mu.Lock()
	if len(fs.active) == 0 {
		fs.mu.Unlock()
		return nil
	}
	var hit *Fault
	for i, st := range fs.active {
		if st.APIKey != r.hdr.Key || st.ClientID != "" && (r.hdr.ClientID == nil || *r.hdr.ClientID != st.ClientID) ||
			st.Topic != "" && !b.requestNames(r.msg, st.Topic, st.Partition) {
			continue
		}
		st.Hits++
		f := st.Fault
		hit = &f
		if st.Remaining > 0 {
			st.Remaining--
			if st.Remaining == 0 {
				fs.active = append(fs.active[:i:i], fs.active[i+1:]...)
				fs.n.Store(int32(len(fs.active)))
			}
		}
		break
	}
	fs.mu.Unlock()
	if hit == nil {
		return nil
	}
	b.log.Debug("fault hit", "api", kmsg.NameForKey(r.hdr.Key), "error", hit.ErrorCode, "latency", hit.Latency, "drop", hit.DropConnection)
	if hit.DropConnection && hit.Latency <= 0 {
		return fmt.Errorf("injected fault: dropping connection on %s", kmsg.NameForKey(r.hdr.Key))
	}
	next := h.fn
	h.fn = func(b *Broker, r *request) (kmsg.Response, error) {
		if hit.Latency > 0 {
			t := time.NewTimer(hit.Latency)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
			}
		}
		switch {
		case hit.DropConnection:
			return nil, fmt.Errorf("injected fault: dropping connection on %s", kmsg.NameForKey(r.hdr.Key))
		case hit.ErrorCode != 0:
			return errorResponseMsg(r.msg, hit.ErrorCode, b.topicNameByID, "injected fault: "), nil
		}
		return next(b, r)
	}
	return nil
}

func (b *Broker) topicNameByID(id [16]byte) string {
	if t := b.lookupTopicID(uuid(id)); t != nil {
		return t.name
	}
	return ""
}

// requestNames reports whether msg names topic (and partition, unless -1)
// anywhere: in a struct with a Topic (or TopicID) field whose Partitions
// lists the partition, or in a list of topic names.
func (b *Broker) requestNames(msg kmsg.Request, topic string, partition int32) bool {
	return namesTopic(reflect.ValueOf(msg).Elem(), topic, partition, b.topicNameByID, 0)
}

func namesTopic(v reflect.Value, topic string, partition int32, byID func([16]byte) string, depth int) bool {
	if depth > 6 {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && namesTopic(v.Elem(), topic, partition, byID, depth+1)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			if partition >= 0 {
				return false
			}
			for i := range v.Len() {
				if v.Index(i).String() == topic {
					return true
				}
			}
			return false
		}
		for i := range v.Len() {
			if namesTopic(v.Index(i), topic, partition, byID, depth+1) {
				return true
			}
		}
		return false
	case reflect.Struct:
	default:
		return false
	}
	if name, ok := structTopic(v, byID); ok {
		if name != topic {
			return false
		}
		if partition < 0 {
			return true
		}
		for _, f := range []string{"Partitions", "PartitionIndexes"} {
			ps := v.FieldByName(f)
			if !ps.IsValid() || ps.Kind() != reflect.Slice {
				continue
			}
			for i := range ps.Len() {
				e := ps.Index(i)
				if e.Kind() == reflect.Int32 && int32(e.Int()) == partition {
					return true
				}
				if e.Kind() == reflect.Struct {
					if p := e.FieldByName("Partition"); p.IsValid() && p.Kind() == reflect.Int32 && int32(p.Int()) == partition {
						return true
					}
				}
			}
		}
		return false
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice || f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct {
			if namesTopic(f, topic, partition, byID, depth+1) {
				return true
			}
		}
	}
	return false
}

// structTopic returns the topic a request or response struct is about, from
// its Topic (string or *string) or TopicID field.
func structTopic(v reflect.Value, byID func([16]byte) string) (string, bool) {
	if f := v.FieldByName("Topic"); f.IsValid() {
		switch {
		case f.Kind() == reflect.String && f.String() != "":
			return f.String(), true
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
			return f.Elem().String(), true
		}
	}
	if f := v.FieldByName("TopicID"); f.IsValid() && f.Type() == reflect.TypeOf([16]byte{}) {
		id := f.Interface().([16]byte)
		if id != ([16]byte{}) {
			return byID(id), true
		}
	}
	return "", false
}

// errorResponse builds msg's response with code set: see the file comment.
func errorResponse(msg kmsg.Request, code int16, byID func([16]byte) string) kmsg.Response {
	return errorResponseMsg(msg, code, byID, "")
}

// errorResponseMsg is errorResponse that, with a prefix, also sets each
// ErrorMessage beside a code set: the prefix and the code's description.
func errorResponseMsg(msg kmsg.Request, code int16, byID func([16]byte) string, prefix string) kmsg.Response {
	resp := msg.ResponseKind()
	rv := reflect.ValueOf(resp).Elem()
	mirror(reflect.ValueOf(msg).Elem(), rv, code, byID, prefix, 0)
	resp.SetVersion(msg.GetVersion())
	return resp
}

// aliases names the request field that a response field mirrors when
// their names differ.
var aliases = map[string][]string{
	"Topics":       {"Topics", "TopicNames"},
	"Partitions":   {"Partitions", "PartitionIndexes"},
	"Coordinators": {"CoordinatorKeys"},
}

// errorOffsetFields are set to -1 in an error answer, as Kafka does.
var errorOffsetFields = []string{"BaseOffset", "LogAppendTime", "LogStartOffset", "HighWatermark", "LastStableOffset", "Offset", "Timestamp", "LeaderEpoch", "LeaderID", "LowWatermark"}

// mirror fills the response struct out from the request struct in: copies
// identifying fields, recreates the lists the request has, and sets code in
// the deepest structs that have an ErrorCode. It reports whether it set
// one.
func mirror(in, out reflect.Value, code int16, byID func([16]byte) string, prefix string, depth int) bool {
	if m := out.Addr().MethodByName("Default"); m.IsValid() && depth > 0 {
		m.Call(nil)
	}
	for _, name := range []string{"Topic", "TopicID", "Partition", "Group", "Key", "MemberID", "GroupInstanceID", "ProtocolType", "ResourceType", "ResourceName", "ProducerID"} {
		src, dst := in.FieldByName(name), out.FieldByName(name)
		if src.IsValid() && dst.IsValid() && src.Type() == dst.Type() && dst.CanSet() {
			dst.Set(src)
		}
	}
	if t := out.FieldByName("Topic"); t.IsValid() && t.Kind() == reflect.String && t.String() == "" {
		if name, ok := structTopic(in, byID); ok {
			t.SetString(name)
		}
	}
	set := false
	for i := range out.NumField() {
		f := out.Field(i)
		name := out.Type().Field(i).Name
		if f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Struct || !f.CanSet() {
			continue
		}
		names := aliases[name]
		if names == nil {
			names = []string{name}
		}
		for _, n := range names {
			src := in.FieldByName(n)
			if !src.IsValid() || src.Kind() != reflect.Slice || src.Len() == 0 {
				continue
			}
			dst := reflect.MakeSlice(f.Type(), src.Len(), src.Len())
			for j := range src.Len() {
				e, d := src.Index(j), dst.Index(j)
				switch e.Kind() {
				case reflect.Struct:
					if mirror(e, d, code, byID, prefix, depth+1) {
						set = true
					}
				case reflect.Int32, reflect.String:
					mirror(reflect.ValueOf(struct{}{}), d, code, byID, prefix, depth+1)
					setIdentity(d, e)
					if setCode(d, code, prefix) {
						set = true
					}
				}
			}
			f.Set(dst)
			break
		}
	}
	if rb := out.FieldByName("RecordBatches"); rb.IsValid() && rb.Kind() == reflect.Slice && rb.IsNil() {
		rb.Set(reflect.MakeSlice(rb.Type(), 0, 0)) // librdkafka rejects null records
	}
	if !set {
		set = setCode(out, code, prefix)
		if set {
			for _, n := range errorOffsetFields {
				if f := out.FieldByName(n); f.IsValid() && f.CanSet() && (f.Kind() == reflect.Int64 || f.Kind() == reflect.Int32) {
					f.SetInt(-1)
				}
			}
		}
	}
	return set
}

// setIdentity fills the identifying field of a response element mirrored
// from a bare partition number or name in the request.
func setIdentity(d, e reflect.Value) {
	if e.Kind() == reflect.Int32 {
		if f := d.FieldByName("Partition"); f.IsValid() && f.Kind() == reflect.Int32 {
			f.SetInt(e.Int())
		}
		return
	}
	for _, n := range []string{"Topic", "Group", "Key", "TransactionalID"} {
		f := d.FieldByName(n)
		switch {
		case !f.IsValid():
			continue
		case f.Kind() == reflect.String:
			f.SetString(e.String())
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			s := e.String()
			f.Set(reflect.ValueOf(&s))
		}
		return
	}
}

func setCode(v reflect.Value, code int16, prefix string) bool {
	f := v.FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return false
	}
	f.SetInt(int64(code))
	if m := v.FieldByName("ErrorMessage"); prefix != "" && m.IsValid() && m.Kind() == reflect.Pointer && m.Type().Elem().Kind() == reflect.String {
		if e := kerr.ErrorForCode(code); e != nil {
			s := prefix + strings.ToLower(e.Error())
			m.Set(reflect.ValueOf(&s))
		}
	}
	return true
}

// hasErrorCode reports whether a response type has an ErrorCode anywhere.
func hasErrorCode(t reflect.Type, depth int) bool {
	if depth > 5 || t.Kind() != reflect.Struct {
		return false
	}
	if _, ok := t.FieldByName("ErrorCode"); ok {
		return true
	}
	for i := range t.NumField() {
		ft := t.Field(i).Type
		if ft.Kind() == reflect.Slice && hasErrorCode(ft.Elem(), depth+1) {
			return true
		}
	}
	return false
}
