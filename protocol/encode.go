package protocol

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EncodeResponse encodes resp (whose version must already be set) behind
// its response header into a frame. ApiVersions always gets header v0.
func EncodeResponse(correlationID int32, resp kmsg.Response) *Out {
	o := &Out{}
	EncodeResponseInto(o, make([]byte, 0, 64), correlationID, resp)
	return o
}

// EncodeResponseInto is EncodeResponse into o (which is reset), appending
// the frame to buf[:0] so that buf's capacity is reused. It returns the
// frame's buffer (buf, or a larger one), which the caller may pass again
// once o has been written and is no longer needed.
func EncodeResponseInto(o *Out, buf []byte, correlationID int32, resp kmsg.Response) []byte {
	buf = append(buf[:0], 0, 0, 0, 0) // the size prefix
	flexible := resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions)
	buf = AppendResponseHeader(buf, correlationID, flexible)
	buf = resp.AppendTo(buf)
	o.Reset(buf)
	return buf
}

// EncodeFetchResponse encodes a Fetch response like kmsg's AppendTo, except
// that a partition's record bytes come from records(topicIndex,
// partitionIndex) as a file region when it reports one; otherwise the
// partition's RecordBatches field is used. Tagged fields that Gregor never
// sets (unknown tags) are not encoded.
func EncodeFetchResponse(correlationID int32, v *kmsg.FetchResponse, records func(t, p int) (Region, bool)) *Out {
	o := &Out{}
	EncodeFetchResponseInto(o, correlationID, v, records)
	return o
}

// EncodeFetchResponseInto is EncodeFetchResponse into o, which is reset;
// the byte buffers that o's previous frame used are reused, so o must not
// be in use (being written) any more.
func EncodeFetchResponseInto(o *Out, correlationID int32, v *kmsg.FetchResponse, records func(t, p int) (Region, bool)) {
	version := v.Version
	flex := version >= 12
	o.nbuf = 0
	started := false // o holds the frame's first part
	part := func(b []byte) {
		o.keepBuf(b)
		if started {
			o.AppendBytes(b)
		} else {
			o.Reset(b)
			started = true
		}
	}
	dst := append(o.nextBuf(256), 0, 0, 0, 0) // the size prefix
	dst = AppendResponseHeader(dst, correlationID, flex)
	if version >= 1 {
		dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, v.ErrorCode)
		dst = kbin.AppendInt32(dst, v.SessionID)
	}
	dst = arrayLen(dst, len(v.Topics), flex)
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if version <= 12 {
			dst = str(dst, t.Topic, flex)
		} else {
			dst = kbin.AppendUuid(dst, t.TopicID)
		}
		dst = arrayLen(dst, len(t.Partitions), flex)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				aborted := p.AbortedTransactions
				if flex {
					dst = kbin.AppendCompactNullableArrayLen(dst, len(aborted), aborted == nil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, len(aborted), aborted == nil)
				}
				for _, a := range aborted {
					dst = kbin.AppendInt64(dst, a.ProducerID)
					dst = kbin.AppendInt64(dst, a.FirstOffset)
					if flex {
						dst = kbin.AppendUvarint(dst, 0) // no tagged fields
					}
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			if r, ok := records(ti, pi); ok && r.Size > 0 {
				// The length of the bytes field; its bytes follow as the region.
				dst = arrayLen(dst, int(r.Size), flex)
				part(dst)
				o.AppendRegion(r)
				dst = o.nextBuf(256)
			} else if flex {
				dst = kbin.AppendCompactNullableBytes(dst, p.RecordBatches)
			} else {
				dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
			}
			if flex {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flex {
			dst = kbin.AppendUvarint(dst, 0) // topic: no tagged fields
		}
	}
	if flex {
		if len(v.Brokers) > 0 {
			var body []byte
			body = arrayLen(body, len(v.Brokers), true)
			for _, b := range v.Brokers {
				body = kbin.AppendInt32(body, b.NodeID)
				body = kbin.AppendCompactString(body, b.Host)
				body = kbin.AppendInt32(body, b.Port)
				body = kbin.AppendCompactNullableString(body, b.Rack)
				body = kbin.AppendUvarint(body, 0) // no tagged fields
			}
			dst = kbin.AppendUvarint(dst, 1) // one tagged field:
			dst = kbin.AppendUvarint(dst, 0) // tag 0, NodeEndpoints
			dst = kbin.AppendUvarint(dst, uint32(len(body)))
			dst = append(dst, body...)
		} else {
			dst = kbin.AppendUvarint(dst, 0) // no tagged fields
		}
	}
	part(dst)
}

func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	var n uint32
	de, cl, sn := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1,
		p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1,
		p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	for _, b := range []bool{de, cl, sn} {
		if b {
			n++
		}
	}
	// Each tagged field is its tag, its size (a fixed-size struct here) and
	// the struct, which ends with its own empty tagged-field section.
	dst = kbin.AppendUvarint(dst, n)
	if de {
		dst = append(dst, 0, 13)
		dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
		dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
		dst = kbin.AppendUvarint(dst, 0)
	}
	if cl {
		dst = append(dst, 1, 9)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderID)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderEpoch)
		dst = kbin.AppendUvarint(dst, 0)
	}
	if sn {
		dst = append(dst, 2, 13)
		dst = kbin.AppendInt64(dst, p.SnapshotID.EndOffset)
		dst = kbin.AppendInt32(dst, p.SnapshotID.Epoch)
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// arrayLen appends an array's (or a bytes field's) length: compact
// (length+1, uvarint) in flexible versions, else int32.
func arrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func str(dst []byte, s string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}
