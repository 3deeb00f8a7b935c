package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// EncodeResponse encodes resp (whose version must already be set) behind
// its response header into a frame. ApiVersions always gets header v0.
func EncodeResponse(correlationID int32, resp kmsg.Response) *Out {
	buf := make([]byte, 4, 64)
	flexible := resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions)
	buf = AppendResponseHeader(buf, correlationID, flexible)
	buf = resp.AppendTo(buf)
	return NewOut(buf)
}

// EncodeFetchResponse encodes a Fetch response like kmsg's AppendTo, except
// that a partition's record bytes come from records(topicIndex,
// partitionIndex) as a file region when it reports one; otherwise the
// partition's RecordBatches field is used. Tagged fields that Gregor never
// sets (unknown tags) are not encoded.
func EncodeFetchResponse(correlationID int32, v *kmsg.FetchResponse, records func(t, p int) (Region, bool)) *Out {
	version := v.Version
	flex := version >= 12
	dst := make([]byte, 4, 256)
	dst = AppendResponseHeader(dst, correlationID, flex)
	out := &Out{}
	if version >= 1 {
		dst = be32(dst, v.ThrottleMillis)
	}
	if version >= 7 {
		dst = be16(dst, v.ErrorCode)
		dst = be32(dst, v.SessionID)
	}
	dst = arrayLen(dst, len(v.Topics), flex)
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if version <= 12 {
			dst = str(dst, t.Topic, flex)
		} else {
			dst = append(dst, t.TopicID[:]...)
		}
		dst = arrayLen(dst, len(t.Partitions), flex)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = be32(dst, p.Partition)
			dst = be16(dst, p.ErrorCode)
			dst = be64(dst, p.HighWatermark)
			if version >= 4 {
				dst = be64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = be64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				if p.AbortedTransactions == nil {
					dst = nullLen(dst, flex)
				} else {
					dst = arrayLen(dst, len(p.AbortedTransactions), flex)
					for _, a := range p.AbortedTransactions {
						dst = be64(dst, a.ProducerID)
						dst = be64(dst, a.FirstOffset)
						if flex {
							dst = append(dst, 0)
						}
					}
				}
			}
			if version >= 11 {
				dst = be32(dst, p.PreferredReadReplica)
			}
			if r, ok := records(ti, pi); ok && r.Size > 0 {
				dst = bytesLen(dst, int(r.Size), flex)
				if out.parts == nil {
					*out = *NewOut(dst)
				} else {
					out.AppendBytes(dst)
				}
				out.AppendRegion(r)
				dst = make([]byte, 0, 256)
			} else if p.RecordBatches == nil {
				dst = nullLen(dst, flex)
			} else {
				dst = bytesLen(dst, len(p.RecordBatches), flex)
				dst = append(dst, p.RecordBatches...)
			}
			if flex {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flex {
			dst = append(dst, 0)
		}
	}
	if flex {
		if len(v.Brokers) > 0 {
			var body []byte
			body = arrayLen(body, len(v.Brokers), true)
			for _, b := range v.Brokers {
				body = be32(body, b.NodeID)
				body = str(body, b.Host, true)
				body = be32(body, b.Port)
				if b.Rack == nil {
					body = append(body, 0)
				} else {
					body = str(body, *b.Rack, true)
				}
				body = append(body, 0)
			}
			dst = binary.AppendUvarint(dst, 1)
			dst = binary.AppendUvarint(dst, 0)
			dst = binary.AppendUvarint(dst, uint64(len(body)))
			dst = append(dst, body...)
		} else {
			dst = append(dst, 0)
		}
	}
	if out.parts == nil {
		return NewOut(dst)
	}
	out.AppendBytes(dst)
	return out
}

func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	var n uint64
	de, cl, sn := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1,
		p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1,
		p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	for _, b := range []bool{de, cl, sn} {
		if b {
			n++
		}
	}
	dst = binary.AppendUvarint(dst, n)
	if de {
		dst = append(dst, 0, 13)
		dst = be32(dst, p.DivergingEpoch.Epoch)
		dst = be64(dst, p.DivergingEpoch.EndOffset)
		dst = append(dst, 0)
	}
	if cl {
		dst = append(dst, 1, 9)
		dst = be32(dst, p.CurrentLeader.LeaderID)
		dst = be32(dst, p.CurrentLeader.LeaderEpoch)
		dst = append(dst, 0)
	}
	if sn {
		dst = append(dst, 2, 13)
		dst = be64(dst, p.SnapshotID.EndOffset)
		dst = be32(dst, p.SnapshotID.Epoch)
		dst = append(dst, 0)
	}
	return dst
}

func be16(dst []byte, v int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(v)) }
func be32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }
func be64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

func arrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return be32(dst, int32(n))
}

func nullLen(dst []byte, flex bool) []byte {
	if flex {
		return append(dst, 0)
	}
	return be32(dst, -1)
}

func bytesLen(dst []byte, n int, flex bool) []byte { return arrayLen(dst, n, flex) }

func str(dst []byte, s string, flex bool) []byte {
	if flex {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = be16(dst, int16(len(s)))
	}
	return append(dst, s...)
}
