package coordinator

// Record formats of KIP-848 consumer groups and KIP-932 share groups in
// __consumer_offsets, which kmsg v1.15.1 does not have (those of
// __share_group_state are in sharerecords.go). They follow Kafka's schemas
// (group-coordinator/src/main/resources/common/message/*.json): a key is its type as an int16
// "version" followed by non-flexible fields (int16-length strings); a
// value is an int16 version (0) followed by flexible fields (compact
// strings and arrays, a tagged-field section closing every struct). Tagged
// fields other than MetadataHash and ClassicMemberMetadata are skipped on
// reading.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Key types (key versions) of __consumer_offsets records; 0-2 are the
// classic ones (OffsetCommit, GroupMetadata).
const (
	keyConsumerGroupMetadata          int16 = 3
	keyConsumerGroupPartitionMetadata int16 = 4 // no longer written by Kafka 4.x (MetadataHash replaced it); read and ignored
	keyConsumerGroupMember            int16 = 5
	keyConsumerGroupTargetMetadata    int16 = 6
	keyConsumerGroupTargetMember      int16 = 7
	keyConsumerGroupCurrentAssignment int16 = 8
	keyShareGroupPartitionMetadata    int16 = 9 // Kafka 4.0 only; read and ignored
	keyShareGroupMember               int16 = 10
	keyShareGroupMetadata             int16 = 11
	keyShareGroupTargetMetadata       int16 = 12
	keyShareGroupTargetMember         int16 = 13
	keyShareGroupCurrentAssignment    int16 = 14
	keyShareGroupStatePartitionMeta   int16 = 15 // not written: share-partition state is not in __share_group_state
	keyConsumerGroupRegex             int16 = 16
)

// Kafka's MemberState values (CurrentMemberAssignment State).
const (
	memberStateStable     int8 = 0
	memberStateUnrevoked  int8 = 1
	memberStateUnreleased int8 = 2
)

var errBadRecord = errors.New("coordinator: malformed group record")

// recordKey is the key of a KIP-848 or share group record: its type, the
// group id and, for per-member records, the member id (for
// ConsumerGroupRegularExpression the regular expression).
type recordKey struct {
	Type   int16
	Group  string
	Member string
}

// hasMember reports whether keys of type t carry a second string.
func keyHasMember(t int16) bool {
	switch t {
	case keyConsumerGroupMember, keyConsumerGroupTargetMember, keyConsumerGroupCurrentAssignment,
		keyShareGroupMember, keyShareGroupTargetMember, keyShareGroupCurrentAssignment, keyConsumerGroupRegex,
		keyStreamsGroupMember, keyStreamsGroupTargetMember, keyStreamsGroupCurrentAssignment:
		return true
	}
	return false
}

// isModernKey reports whether t is a key type of recordKey.
func isModernKey(t int16) bool {
	return (t >= keyConsumerGroupMetadata && t <= keyConsumerGroupRegex) || isStreamsKey(t)
}

func (k recordKey) encode() []byte {
	b := kbin.AppendInt16(nil, k.Type)
	b = kbin.AppendString(b, k.Group)
	if keyHasMember(k.Type) {
		b = kbin.AppendString(b, k.Member)
	}
	return b
}

func decodeRecordKey(b []byte) (recordKey, error) {
	r := kbin.Reader{Src: b}
	k := recordKey{Type: r.Int16()}
	if !isModernKey(k.Type) {
		return k, errBadRecord
	}
	k.Group = r.String()
	if keyHasMember(k.Type) {
		k.Member = r.String()
	}
	if r.Complete() != nil || len(r.Src) != 0 {
		return k, errBadRecord
	}
	return k, nil
}

// vreader reads a flexible value.
type vreader struct{ kbin.Reader }

func newVReader(b []byte) (*vreader, error) {
	r := &vreader{kbin.Reader{Src: b}}
	if v := r.Int16(); v != 0 || !r.Ok() {
		return nil, errBadRecord
	}
	return r, nil
}

// tags reads a tagged-field section, calling fn (if non-nil) with each
// field's tag and a reader over its bytes.
func (r *vreader) tags(fn func(tag uint32, f *kbin.Reader)) {
	n := r.Uvarint()
	for range n {
		tag, size := r.Uvarint(), r.Uvarint()
		f := kbin.Reader{Src: r.Span(int(size))}
		if fn != nil && r.Ok() {
			fn(tag, &f)
		}
	}
}

func (r *vreader) strings() []string {
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		r.Span(len(r.Src) + 1) // fail
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, r.CompactString())
	}
	return out
}

func (r *vreader) int32s() []int32 {
	n := r.CompactArrayLen()
	if n < 0 || int(n)*4 > len(r.Src) {
		r.Span(len(r.Src) + 1)
		return nil
	}
	out := make([]int32, 0, n)
	for range n {
		out = append(out, r.Int32())
	}
	return out
}

func (r *vreader) done() error {
	if r.Complete() != nil {
		return errBadRecord
	}
	return nil
}

func appendStrings(b []byte, ss []string) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ss))
	for _, s := range ss {
		b = kbin.AppendCompactString(b, s)
	}
	return b
}

func appendInt32s(b []byte, is []int32) []byte {
	b = kbin.AppendCompactArrayLen(b, len(is))
	for _, i := range is {
		b = kbin.AppendInt32(b, i)
	}
	return b
}

func appendNoTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// topicPartitions is the TopicPartition(s) struct of the assignment
// records: a topic id and its partitions.
type topicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
	// AssignmentEpochs is the epoch at which each partition was assigned,
	// aligned with Partitions (KIP-1251): the tagged field 0, a nullable
	// int32 array, of ConsumerGroupCurrentMemberAssignmentValue's
	// TopicPartitions only. nil is absent (records of Kafka before 4.3).
	AssignmentEpochs []int32
}

func appendTopicPartitions(b []byte, partitionSet []topicPartitions) []byte {
	b = kbin.AppendCompactArrayLen(b, len(partitionSet))
	for _, tp := range partitionSet {
		b = kbin.AppendUuid(b, tp.TopicID)
		b = appendInt32s(b, tp.Partitions)
		if tp.AssignmentEpochs == nil {
			b = appendNoTags(b)
			continue
		}
		f := appendInt32s(nil, tp.AssignmentEpochs)
		b = kbin.AppendUvarint(b, 1) // one tagged field
		b = kbin.AppendUvarint(b, 0) // tag 0
		b = kbin.AppendUvarint(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// topicPartitions reads a TopicPartition(s) array; withEpochs reads the
// tagged AssignmentEpochs, which other records do not define.
func (r *vreader) topicPartitions(withEpochs bool) []topicPartitions {
	n := r.CompactArrayLen()
	if n < 0 || int(n)*18 > len(r.Src) {
		r.Span(len(r.Src) + 1)
		return nil
	}
	out := make([]topicPartitions, 0, n)
	for range n {
		tp := topicPartitions{TopicID: r.Uuid(), Partitions: r.int32s()}
		bad := false
		r.tags(func(tag uint32, f *kbin.Reader) {
			if tag == 0 && withEpochs {
				tp.AssignmentEpochs, bad = readNullableInt32s(f)
			}
		})
		if bad {
			r.Span(len(r.Src) + 1) // fail
			return nil
		}
		out = append(out, tp)
	}
	return out
}

// readNullableInt32s reads a tagged field holding a compact nullable
// int32 array, and reports whether it was malformed.
func readNullableInt32s(f *kbin.Reader) ([]int32, bool) {
	n := f.CompactArrayLen()
	if n < 0 {
		return nil, f.Complete() != nil || len(f.Src) != 0
	}
	if int(n)*4 != len(f.Src) {
		return nil, true
	}
	out := make([]int32, 0, n)
	for range n {
		out = append(out, f.Int32())
	}
	return out, f.Complete() != nil
}

// groupMetadataValue is ConsumerGroupMetadataValue (MetadataHash is tag 0)
// and ShareGroupMetadataValue (MetadataHash a regular field).
type groupMetadataValue struct {
	Epoch        int32
	MetadataHash int64
}

func (v groupMetadataValue) encodeConsumer() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.Epoch)
	if v.MetadataHash == 0 {
		return appendNoTags(b)
	}
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, 8) // its size
	return kbin.AppendInt64(b, v.MetadataHash)
}

func decodeConsumerGroupMetadata(b []byte) (v groupMetadataValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.Epoch = r.Int32()
	r.tags(func(tag uint32, f *kbin.Reader) {
		if tag == 0 {
			v.MetadataHash = f.Int64()
		}
	})
	return v, r.done()
}

func (v groupMetadataValue) encodeShare() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.Epoch)
	b = kbin.AppendInt64(b, v.MetadataHash)
	return appendNoTags(b)
}

func decodeShareGroupMetadata(b []byte) (v groupMetadataValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.Epoch, v.MetadataHash = r.Int32(), r.Int64()
	r.tags(nil)
	return v, r.done()
}

// epochValue is ConsumerGroupTargetAssignmentMetadataValue and
// ShareGroupTargetAssignmentMetadataValue: the assignment epoch.
func encodeEpochValue(epoch int32) []byte {
	return appendNoTags(kbin.AppendInt32(kbin.AppendInt16(nil, 0), epoch))
}

func decodeEpochValue(b []byte) (int32, error) {
	r, err := newVReader(b)
	if err != nil {
		return 0, err
	}
	e := r.Int32()
	r.tags(nil)
	return e, r.done()
}

// consumerMemberValue is ConsumerGroupMemberMetadataValue.
type consumerMemberValue struct {
	InstanceID, RackID   *string
	ClientID, ClientHost string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	RebalanceTimeoutMs   int32
	ServerAssignor       *string
	// Classic is the tagged ClassicMemberMetadata (tag 0) of members
	// using the classic protocol, nil for the others.
	Classic *classicMemberValue
}

// classicMemberValue is ClassicMemberMetadata: the session timeout and the
// JoinGroup protocols of a member using the classic protocol.
type classicMemberValue struct {
	SessionTimeoutMs   int32
	SupportedProtocols []protocol
}

// encode appends the struct as a tagged field holds a nullable struct: a
// uvarint 1 (present), then its fields.
func (v *classicMemberValue) encode(b []byte) []byte {
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendInt32(b, v.SessionTimeoutMs)
	b = kbin.AppendCompactArrayLen(b, len(v.SupportedProtocols))
	for _, p := range v.SupportedProtocols {
		b = kbin.AppendCompactString(b, p.name)
		b = kbin.AppendCompactBytes(b, p.metadata)
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func decodeClassicMember(f *kbin.Reader) (*classicMemberValue, error) {
	if f.Uvarint() == 0 {
		return nil, f.Complete()
	}
	r := &vreader{*f}
	v := &classicMemberValue{SessionTimeoutMs: r.Int32()}
	n := r.CompactArrayLen()
	if n < 0 || int(n)*3 > len(r.Src) {
		return nil, errBadRecord
	}
	for range n {
		p := protocol{name: r.CompactString(), metadata: slices.Clone(r.CompactBytes())}
		r.tags(nil)
		v.SupportedProtocols = append(v.SupportedProtocols, p)
	}
	r.tags(nil)
	if r.Complete() != nil || len(r.Src) != 0 {
		return nil, errBadRecord
	}
	return v, nil
}

func (v *consumerMemberValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, v.InstanceID)
	b = kbin.AppendCompactNullableString(b, v.RackID)
	b = kbin.AppendCompactString(b, v.ClientID)
	b = kbin.AppendCompactString(b, v.ClientHost)
	b = appendStrings(b, v.SubscribedTopicNames)
	b = kbin.AppendCompactNullableString(b, v.SubscribedTopicRegex)
	b = kbin.AppendInt32(b, v.RebalanceTimeoutMs)
	b = kbin.AppendCompactNullableString(b, v.ServerAssignor)
	if v.Classic == nil {
		return appendNoTags(b)
	}
	cm := v.Classic.encode(nil)
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, uint32(len(cm)))
	return append(b, cm...)
}

func decodeConsumerMember(b []byte) (v consumerMemberValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.InstanceID, v.RackID = r.CompactNullableString(), r.CompactNullableString()
	v.ClientID, v.ClientHost = r.CompactString(), r.CompactString()
	v.SubscribedTopicNames = r.strings()
	v.SubscribedTopicRegex = r.CompactNullableString()
	v.RebalanceTimeoutMs = r.Int32()
	v.ServerAssignor = r.CompactNullableString()
	var cerr error
	r.tags(func(tag uint32, f *kbin.Reader) {
		if tag == 0 {
			v.Classic, cerr = decodeClassicMember(f)
		}
	})
	if cerr != nil {
		return v, errBadRecord
	}
	return v, r.done()
}

// shareMemberValue is ShareGroupMemberMetadataValue.
type shareMemberValue struct {
	RackID               *string
	ClientID, ClientHost string
	SubscribedTopicNames []string
}

func (v *shareMemberValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, v.RackID)
	b = kbin.AppendCompactString(b, v.ClientID)
	b = kbin.AppendCompactString(b, v.ClientHost)
	b = appendStrings(b, v.SubscribedTopicNames)
	return appendNoTags(b)
}

func decodeShareMember(b []byte) (v shareMemberValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.RackID = r.CompactNullableString()
	v.ClientID, v.ClientHost = r.CompactString(), r.CompactString()
	v.SubscribedTopicNames = r.strings()
	r.tags(nil)
	return v, r.done()
}

// encodeTargetMember is Consumer/ShareGroupTargetAssignmentMemberValue.
func encodeTargetMember(partitionSet []topicPartitions) []byte {
	return appendNoTags(appendTopicPartitions(kbin.AppendInt16(nil, 0), partitionSet))
}

func decodeTargetMember(b []byte) ([]topicPartitions, error) {
	r, err := newVReader(b)
	if err != nil {
		return nil, err
	}
	partitionSet := r.topicPartitions(false)
	r.tags(nil)
	return partitionSet, r.done()
}

// currentAssignmentValue is ConsumerGroupCurrentMemberAssignmentValue and,
// without PartitionsPendingRevocation, ShareGroupCurrentMemberAssignmentValue.
type currentAssignmentValue struct {
	MemberEpoch, PreviousMemberEpoch int32
	State                            int8
	AssignedPartitions               []topicPartitions
	PartitionsPendingRevocation      []topicPartitions // consumer groups only
}

func (v *currentAssignmentValue) encode(share bool) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.MemberEpoch)
	b = kbin.AppendInt32(b, v.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, v.State)
	b = appendTopicPartitions(b, v.AssignedPartitions)
	if !share {
		b = appendTopicPartitions(b, v.PartitionsPendingRevocation)
	}
	return appendNoTags(b)
}

func decodeCurrentAssignment(b []byte, share bool) (v currentAssignmentValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.MemberEpoch, v.PreviousMemberEpoch, v.State = r.Int32(), r.Int32(), r.Int8()
	v.AssignedPartitions = r.topicPartitions(!share)
	if !share {
		v.PartitionsPendingRevocation = r.topicPartitions(true)
	}
	r.tags(nil)
	return v, r.done()
}

// regexValue is ConsumerGroupRegularExpressionValue: the topics a regex
// resolved to, the metadata version of the resolution and its time.
type regexValue struct {
	Topics    []string
	Version   int64
	Timestamp int64
}

func (v *regexValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendStrings(b, v.Topics)
	b = kbin.AppendInt64(b, v.Version)
	b = kbin.AppendInt64(b, v.Timestamp)
	return appendNoTags(b)
}

func decodeRegex(b []byte) (v regexValue, err error) {
	r, err := newVReader(b)
	if err != nil {
		return v, err
	}
	v.Topics = r.strings()
	v.Version, v.Timestamp = r.Int64(), r.Int64()
	r.tags(nil)
	return v, r.done()
}

// toTopicPartitions converts an assignment by topic name to the records'
// form by topic id, sorted by topic id; topics unknown to ids are dropped.
// With epochOf, each partition's assignment epoch is added.
func toTopicPartitions(a partitionSet, ids map[string]ConsumerTopic, epochOf func(t string, p int32) int32) []topicPartitions {
	out := []topicPartitions{}
	for t, ps := range a {
		ct, ok := ids[t]
		if !ok || len(ps) == 0 {
			continue
		}
		tp := topicPartitions{TopicID: ct.ID, Partitions: slices.Clone(ps)}
		if epochOf != nil {
			tp.AssignmentEpochs = make([]int32, len(ps))
			for i, p := range ps {
				tp.AssignmentEpochs[i] = epochOf(t, p)
			}
		}
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b topicPartitions) int { return slices.Compare(a.TopicID[:], b.TopicID[:]) })
	return out
}

// fromTopicPartitions converts back; topics no longer known are dropped.
func fromTopicPartitions(in []topicPartitions, names map[[16]byte]string) partitionSet {
	out := partitionSet{}
	for _, tp := range in {
		name, ok := names[tp.TopicID]
		if !ok {
			continue
		}
		for _, p := range tp.Partitions {
			out.add(name, p)
		}
	}
	return out
}
