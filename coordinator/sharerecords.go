package coordinator

// Records of __share_group_state, the share coordinator's log (KIP-932),
// in Kafka 4.x's formats (share-coordinator/src/main/resources/common/
// message/ShareSnapshot{Key,Value}.json, ShareUpdate{Key,Value}.json),
// which kmsg v1.15.1 does not have.
//
// A key is its record type as an int16 (0 ShareSnapshot, 1 ShareUpdate)
// followed by the non-flexible fields GroupId (int16-length string),
// TopicId (uuid) and Partition (int32). A value is an int16 version (0)
// followed by flexible fields:
//
//	ShareSnapshotValue: SnapshotEpoch int32, StateEpoch int32,
//	  LeaderEpoch int32, StartOffset int64, CreateTimestamp int64,
//	  WriteTimestamp int64, StateBatches, tags
//	ShareUpdateValue: SnapshotEpoch int32, LeaderEpoch int32,
//	  StartOffset int64 (-1: unchanged), StateBatches, tags
//	StateBatch: FirstOffset int64, LastOffset int64, DeliveryState int8,
//	  DeliveryCount int16, tags
//
// DeliveryCompleteCount (Kafka 4.2, KIP-1226) is tagged field 0 of both
// values, default -1 (not written then). A nil value is a tombstone.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record types (key versions) of __share_group_state.
const (
	ShareSnapshotRecord int16 = 0
	ShareUpdateRecord   int16 = 1
)

// ShareStateBatch is a StateBatch: a run of offsets with one delivery
// state (0 Available, 2 Acknowledged, 4 Archived) and delivery count.
type ShareStateBatch struct {
	FirstOffset, LastOffset int64
	DeliveryState           int8
	DeliveryCount           int16
}

// Persisted delivery states.
const (
	shareStateAvailable    int8 = 0
	shareStateAcknowledged int8 = 2
	shareStateArchived     int8 = 4
)

// ShareSnapshot is ShareSnapshotValue, the whole state of one
// share-partition.
type ShareSnapshot struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: unknown (not written)
	CreateTimestamp       int64
	WriteTimestamp        int64
	StateBatches          []ShareStateBatch
}

// ShareUpdate is ShareUpdateValue, a change to the latest snapshot: the
// batches written replace the state of their offsets.
type ShareUpdate struct {
	SnapshotEpoch         int32
	LeaderEpoch           int32
	StartOffset           int64 // -1: unchanged
	DeliveryCompleteCount int32 // -1: unknown (not written)
	StateBatches          []ShareStateBatch
}

// ShareStateKey identifies a share-partition: a group on one topic
// partition.
type ShareStateKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// EncodeShareStateKey encodes the key of a record of type t
// (ShareSnapshotRecord or ShareUpdateRecord) for k.
func EncodeShareStateKey(t int16, k ShareStateKey) []byte {
	b := kbin.AppendInt16(nil, t)
	b = kbin.AppendString(b, k.Group)
	b = kbin.AppendUuid(b, k.TopicID)
	return kbin.AppendInt32(b, k.Partition)
}

// ShareSnapshotKey is the key of a ShareSnapshot record.
func ShareSnapshotKey(group string, topicID [16]byte, partition int32) []byte {
	return EncodeShareStateKey(ShareSnapshotRecord, ShareStateKey{group, topicID, partition})
}

var errBadShareKey = errors.New("coordinator: malformed __share_group_state key")

// DecodeShareStateKey decodes a key of __share_group_state: its record
// type and share-partition.
func DecodeShareStateKey(b []byte) (int16, ShareStateKey, error) {
	r := kbin.Reader{Src: b}
	t := r.Int16()
	var k ShareStateKey
	k.Group = r.String()
	k.TopicID = r.Uuid()
	k.Partition = r.Int32()
	if r.Complete() != nil || (t != ShareSnapshotRecord && t != ShareUpdateRecord) {
		return 0, ShareStateKey{}, errBadShareKey
	}
	return t, k, nil
}

func appendStateBatches(b []byte, sbs []ShareStateBatch) []byte {
	b = kbin.AppendCompactArrayLen(b, len(sbs))
	for _, sb := range sbs {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, sb.DeliveryState)
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = appendNoTags(b)
	}
	return b
}

func (r *vreader) stateBatches() []ShareStateBatch {
	n := r.CompactArrayLen()
	if n < 0 || int(n)*20 > len(r.Src) {
		r.Span(len(r.Src) + 1) // fail
		return nil
	}
	out := make([]ShareStateBatch, 0, n)
	for range n {
		sb := ShareStateBatch{FirstOffset: r.Int64(), LastOffset: r.Int64(), DeliveryState: r.Int8(), DeliveryCount: r.Int16()}
		r.tags(nil)
		out = append(out, sb)
	}
	return out
}

// appendDeliveryCompleteTag closes a value with its tagged fields:
// DeliveryCompleteCount (tag 0) unless it is -1.
func appendDeliveryCompleteTag(b []byte, n int32) []byte {
	if n == -1 {
		return appendNoTags(b)
	}
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, 0)
	b = kbin.AppendUvarint(b, 4)
	return kbin.AppendInt32(b, n)
}

func (r *vreader) deliveryCompleteTag() int32 {
	n := int32(-1)
	r.tags(func(tag uint32, f *kbin.Reader) {
		if tag == 0 {
			n = f.Int32()
			if f.Complete() != nil {
				r.Span(len(r.Src) + 1) // fail
			}
		}
	})
	return n
}

// Encode encodes s as a ShareSnapshotValue of version 0.
func (s *ShareSnapshot) Encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, s.SnapshotEpoch)
	b = kbin.AppendInt32(b, s.StateEpoch)
	b = kbin.AppendInt32(b, s.LeaderEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = kbin.AppendInt64(b, s.CreateTimestamp)
	b = kbin.AppendInt64(b, s.WriteTimestamp)
	b = appendStateBatches(b, s.StateBatches)
	return appendDeliveryCompleteTag(b, s.DeliveryCompleteCount)
}

// DecodeShareSnapshot decodes a ShareSnapshotValue.
func DecodeShareSnapshot(b []byte) (s ShareSnapshot, err error) {
	r, err := newVReader(b)
	if err != nil {
		return s, err
	}
	s.SnapshotEpoch, s.StateEpoch, s.LeaderEpoch, s.StartOffset = r.Int32(), r.Int32(), r.Int32(), r.Int64()
	s.CreateTimestamp, s.WriteTimestamp = r.Int64(), r.Int64()
	s.StateBatches = r.stateBatches()
	s.DeliveryCompleteCount = r.deliveryCompleteTag()
	return s, r.done()
}

// Encode encodes u as a ShareUpdateValue of version 0.
func (u *ShareUpdate) Encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, u.SnapshotEpoch)
	b = kbin.AppendInt32(b, u.LeaderEpoch)
	b = kbin.AppendInt64(b, u.StartOffset)
	b = appendStateBatches(b, u.StateBatches)
	return appendDeliveryCompleteTag(b, u.DeliveryCompleteCount)
}

// DecodeShareUpdate decodes a ShareUpdateValue.
func DecodeShareUpdate(b []byte) (u ShareUpdate, err error) {
	r, err := newVReader(b)
	if err != nil {
		return u, err
	}
	u.SnapshotEpoch, u.LeaderEpoch, u.StartOffset = r.Int32(), r.Int32(), r.Int64()
	u.StateBatches = r.stateBatches()
	u.DeliveryCompleteCount = r.deliveryCompleteTag()
	return u, r.done()
}
