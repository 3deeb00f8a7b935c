package coordinator

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// unhex decodes hex with spaces, for golden bytes written from the schemas.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var uuidT = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

const uuidTHex = "000102030405060708090a0b0c0d0e0f"

// Golden bytes built by hand from Kafka's schemas: a key is its type
// (int16) and int16-length strings; a value is version 0 (int16), compact
// strings and arrays (length+1 as a uvarint; 0 is null), a tagged-field
// count (uvarint) closing every struct.
func TestGroupRecordsGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"ConsumerGroupMetadataKey", recordKey{keyConsumerGroupMetadata, "g", ""}.encode(), "0003 0001 67"},
		{"ConsumerGroupMemberMetadataKey", recordKey{keyConsumerGroupMember, "g", "m"}.encode(), "0005 0001 67 0001 6d"},
		{"ConsumerGroupTargetAssignmentMetadataKey", recordKey{keyConsumerGroupTargetMetadata, "g", ""}.encode(), "0006 0001 67"},
		{"ConsumerGroupTargetAssignmentMemberKey", recordKey{keyConsumerGroupTargetMember, "g", "m"}.encode(), "0007 0001 67 0001 6d"},
		{"ConsumerGroupCurrentMemberAssignmentKey", recordKey{keyConsumerGroupCurrentAssignment, "g", "m"}.encode(), "0008 0001 67 0001 6d"},
		{"ConsumerGroupRegularExpressionKey", recordKey{keyConsumerGroupRegex, "g", "a.*"}.encode(), "0010 0001 67 0003 612e2a"},
		{"ShareGroupMemberMetadataKey", recordKey{keyShareGroupMember, "g", "m"}.encode(), "000a 0001 67 0001 6d"},
		{"ShareGroupMetadataKey", recordKey{keyShareGroupMetadata, "g", ""}.encode(), "000b 0001 67"},
		{"ShareGroupTargetAssignmentMetadataKey", recordKey{keyShareGroupTargetMetadata, "g", ""}.encode(), "000c 0001 67"},
		{"ShareGroupTargetAssignmentMemberKey", recordKey{keyShareGroupTargetMember, "g", "m"}.encode(), "000d 0001 67 0001 6d"},
		{"ShareGroupCurrentMemberAssignmentKey", recordKey{keyShareGroupCurrentAssignment, "g", "m"}.encode(), "000e 0001 67 0001 6d"},

		{"ConsumerGroupMetadataValue", groupMetadataValue{Epoch: 5}.encodeConsumer(), "0000 00000005 00"},
		{"ConsumerGroupMetadataValue/MetadataHash", groupMetadataValue{Epoch: 5, MetadataHash: 0x0102030405060708}.encodeConsumer(),
			"0000 00000005 01 00 08 0102030405060708"},
		{"ConsumerGroupMemberMetadataValue", (&consumerMemberValue{
			RackID: nullable("r"), ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"},
			RebalanceTimeoutMs: 1000, ServerAssignor: nullable("uniform"),
		}).encode(), "0000 00 0272 0263 0268 02 0274 00 000003e8 08 756e69666f726d 00"},
		{"ConsumerGroupMemberMetadataValue/static-regex", (&consumerMemberValue{
			InstanceID: nullable("i"), ClientID: "", ClientHost: "", SubscribedTopicNames: []string{},
			SubscribedTopicRegex: nullable("t.*"), RebalanceTimeoutMs: -1,
		}).encode(), "0000 0269 00 01 01 01 04742e2a ffffffff 00 00"},
		// ClassicMemberMetadata is tag 0, a nullable struct: its size
		// counts a leading uvarint 1 (present).
		{"ConsumerGroupMemberMetadataValue/classic", (&consumerMemberValue{
			ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}, RebalanceTimeoutMs: 1000,
			Classic: &classicMemberValue{SessionTimeoutMs: 10000, SupportedProtocols: []protocol{{"range", []byte("m")}}},
		}).encode(), "0000 00 00 0263 0268 02 0274 00 000003e8 00 01 00 10 01 00002710 02 06 72616e6765 02 6d 00 00"},
		{"ConsumerGroupTargetAssignmentMetadataValue", encodeEpochValue(7), "0000 00000007 00"},
		{"ConsumerGroupTargetAssignmentMemberValue", encodeTargetMember([]topicPartitions{{TopicID: uuidT, Partitions: []int32{0, 1}}}),
			"0000 02 " + uuidTHex + " 03 00000000 00000001 00 00"},
		{"ConsumerGroupCurrentMemberAssignmentValue", (&currentAssignmentValue{MemberEpoch: 3, PreviousMemberEpoch: 2, State: memberStateUnrevoked,
			AssignedPartitions: []topicPartitions{{TopicID: uuidT, Partitions: []int32{2}}}, PartitionsPendingRevocation: []topicPartitions{}}).encode(false),
			"0000 00000003 00000002 01 02 " + uuidTHex + " 02 00000002 00 01 00"},
		// AssignmentEpochs (KIP-1251) is tag 0 of each TopicPartitions, a
		// compact nullable int32 array.
		{"ConsumerGroupCurrentMemberAssignmentValue/AssignmentEpochs", (&currentAssignmentValue{MemberEpoch: 3, PreviousMemberEpoch: 2, State: memberStateUnrevoked,
			AssignedPartitions:          []topicPartitions{{TopicID: uuidT, Partitions: []int32{2}, AssignmentEpochs: []int32{1}}},
			PartitionsPendingRevocation: []topicPartitions{{TopicID: uuidT, Partitions: []int32{3, 4}, AssignmentEpochs: []int32{2, 3}}}}).encode(false),
			"0000 00000003 00000002 01 02 " + uuidTHex + " 02 00000002 01 00 05 02 00000001 02 " + uuidTHex + " 03 00000003 00000004 01 00 09 03 00000002 00000003 00"},
		{"ConsumerGroupRegularExpressionValue", (&regexValue{Topics: []string{"t"}, Version: 9, Timestamp: 1000}).encode(),
			"0000 02 0274 0000000000000009 00000000000003e8 00"},
		{"ShareGroupMetadataValue", groupMetadataValue{Epoch: 5, MetadataHash: 1}.encodeShare(), "0000 00000005 0000000000000001 00"},
		{"ShareGroupMemberMetadataValue", (&shareMemberValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}}).encode(),
			"0000 00 0263 0268 02 0274 00"},
		{"ShareGroupCurrentMemberAssignmentValue", (&currentAssignmentValue{MemberEpoch: 4, PreviousMemberEpoch: 3,
			AssignedPartitions: []topicPartitions{{TopicID: uuidT, Partitions: []int32{1}}}}).encode(true),
			"0000 00000004 00000003 00 02 " + uuidTHex + " 02 00000001 00 00"},
	} {
		if want := unhex(t, tc.want); !bytes.Equal(tc.got, want) {
			t.Errorf("%s:\n got %x\nwant %x", tc.name, tc.got, want)
		}
	}
}

func TestGroupRecordsRoundTrip(t *testing.T) {
	for _, k := range []recordKey{
		{keyConsumerGroupMetadata, "group", ""}, {keyConsumerGroupMember, "group", "member"},
		{keyConsumerGroupRegex, "group", "^a|b$"}, {keyShareGroupCurrentAssignment, "g", "m"},
	} {
		got, err := decodeRecordKey(k.encode())
		if err != nil || got != k {
			t.Errorf("key %+v: decoded %+v, %v", k, got, err)
		}
	}
	if _, err := decodeRecordKey(unhex(t, "0001 0001 67")); err == nil {
		t.Error("an OffsetCommit key decoded as a group record key")
	}
	if _, err := decodeRecordKey(unhex(t, "0003 0005 67")); err == nil {
		t.Error("a truncated key decoded")
	}

	md := groupMetadataValue{Epoch: 9, MetadataHash: -3}
	if got, err := decodeConsumerGroupMetadata(md.encodeConsumer()); err != nil || got != md {
		t.Errorf("ConsumerGroupMetadata: %+v, %v", got, err)
	}
	if got, err := decodeShareGroupMetadata(md.encodeShare()); err != nil || got != md {
		t.Errorf("ShareGroupMetadata: %+v, %v", got, err)
	}
	// Unknown tagged fields (a newer Kafka's CreationTimeMs, tag 1) are skipped.
	withTag := unhex(t, "0000 00000005 02 00 08 0000000000000007 01 08 0000000000000063")
	if got, err := decodeConsumerGroupMetadata(withTag); err != nil || got != (groupMetadataValue{5, 7}) {
		t.Errorf("ConsumerGroupMetadata with tags: %+v, %v", got, err)
	}
	cm := consumerMemberValue{InstanceID: nullable("i"), RackID: nullable("r"), ClientID: "c", ClientHost: "/h",
		SubscribedTopicNames: []string{"a", "b"}, SubscribedTopicRegex: nullable("x"), RebalanceTimeoutMs: 3, ServerAssignor: nullable("range")}
	if got, err := decodeConsumerMember(cm.encode()); err != nil || !reflect.DeepEqual(got, cm) {
		t.Errorf("ConsumerGroupMemberMetadata: %+v, %v", got, err)
	}
	cm.Classic = &classicMemberValue{SessionTimeoutMs: 45000, SupportedProtocols: []protocol{{"cooperative-sticky", []byte{0, 1}}, {"range", []byte{}}}}
	if got, err := decodeConsumerMember(cm.encode()); err != nil || !reflect.DeepEqual(got, cm) {
		t.Errorf("ConsumerGroupMemberMetadata with ClassicMemberMetadata: %+v, %v", got, err)
	}
	for i := range cm.encode() {
		if _, err := decodeConsumerMember(cm.encode()[:i]); err == nil {
			t.Errorf("ConsumerGroupMemberMetadata with ClassicMemberMetadata truncated to %d bytes decoded", i)
		}
	}
	cm.Classic = nil
	sm := shareMemberValue{RackID: nullable("r"), ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}}
	if got, err := decodeShareMember(sm.encode()); err != nil || !reflect.DeepEqual(got, sm) {
		t.Errorf("ShareGroupMemberMetadata: %+v, %v", got, err)
	}
	tp := []topicPartitions{{TopicID: uuidT, Partitions: []int32{0, 5}}, {TopicID: [16]byte{9}, Partitions: []int32{1}}}
	if got, err := decodeTargetMember(encodeTargetMember(tp)); err != nil || !reflect.DeepEqual(got, tp) {
		t.Errorf("TargetAssignmentMember: %+v, %v", got, err)
	}
	ca := currentAssignmentValue{MemberEpoch: 4, PreviousMemberEpoch: 3, State: memberStateUnreleased, AssignedPartitions: tp, PartitionsPendingRevocation: tp[:1]}
	if got, err := decodeCurrentAssignment(ca.encode(false), false); err != nil || !reflect.DeepEqual(got, ca) {
		t.Errorf("ConsumerGroupCurrentMemberAssignment: %+v, %v", got, err)
	}
	ce := currentAssignmentValue{MemberEpoch: 4, PreviousMemberEpoch: 3,
		AssignedPartitions:          []topicPartitions{{TopicID: uuidT, Partitions: []int32{0, 5}, AssignmentEpochs: []int32{2, 4}}},
		PartitionsPendingRevocation: []topicPartitions{{TopicID: [16]byte{9}, Partitions: []int32{1}, AssignmentEpochs: []int32{1}}}}
	if got, err := decodeCurrentAssignment(ce.encode(false), false); err != nil || !reflect.DeepEqual(got, ce) {
		t.Errorf("ConsumerGroupCurrentMemberAssignment with AssignmentEpochs: %+v, %v", got, err)
	}
	for i := range ce.encode(false) {
		if _, err := decodeCurrentAssignment(ce.encode(false)[:i], false); err == nil {
			t.Errorf("ConsumerGroupCurrentMemberAssignment with AssignmentEpochs truncated to %d bytes decoded", i)
		}
	}
	// A null AssignmentEpochs reads as absent.
	null := unhex(t, "0000 00000003 00000002 00 02 "+uuidTHex+" 02 00000002 01 00 01 00 01 00")
	if got, err := decodeCurrentAssignment(null, false); err != nil || got.AssignedPartitions[0].AssignmentEpochs != nil {
		t.Errorf("ConsumerGroupCurrentMemberAssignment with null AssignmentEpochs: %+v, %v", got, err)
	}
	ca.PartitionsPendingRevocation = nil
	if got, err := decodeCurrentAssignment(ca.encode(true), true); err != nil || !reflect.DeepEqual(got, ca) {
		t.Errorf("ShareGroupCurrentMemberAssignment: %+v, %v", got, err)
	}
	if e, err := decodeEpochValue(encodeEpochValue(-7)); err != nil || e != -7 {
		t.Errorf("TargetAssignmentMetadata: %d, %v", e, err)
	}
	rv := regexValue{Topics: []string{"a"}, Version: 1, Timestamp: 2}
	if got, err := decodeRegex(rv.encode()); err != nil || !reflect.DeepEqual(got, rv) {
		t.Errorf("RegularExpression: %+v, %v", got, err)
	}
	// Truncations never panic and always fail.
	full := cm.encode()
	for i := range full {
		if _, err := decodeConsumerMember(full[:i]); err == nil {
			t.Errorf("ConsumerGroupMemberMetadata truncated to %d bytes decoded", i)
		}
	}
}
