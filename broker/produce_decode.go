package broker

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeProduce decodes a Produce request body (v3-12) into req as kmsg's
// ReadFrom does, field for field and error for error
// (FuzzDecodeProduce compares the two), except that it allocates nothing
// in the steady state: every list is appended into the capacity req's
// previous contents left, nested partition lists included (kmsg zeroes
// them), and topic names come from names. As with kmsg, Records alias
// body. req's version must be set; other versions go to kmsg.
func decodeProduce(req *kmsg.ProduceRequest, body []byte, names *nameCache) error {
	version := req.Version
	if version < 3 || version > 12 {
		return req.ReadFrom(body)
	}
	flex := version >= 9
	topics := req.Topics
	*req = kmsg.ProduceRequest{Version: version}
	req.Default()
	b := kbin.Reader{Src: body}
	if l := readLen(&b, flex); l >= 0 {
		req.TransactionID = names.txnID(b.Span(l))
	}
	req.Acks = b.Int16()
	req.TimeoutMillis = b.Int32()
	n := readArrayLen(&b, flex)
	if !b.Ok() || int64(n)*2 > int64(len(b.Src)) {
		return kbin.ErrNotEnoughData
	}
	topics = grow(topics, max(int(n), 0))
	for i := range topics {
		t := &topics[i]
		parts := t.Partitions[:0]
		*t = kmsg.ProduceRequestTopic{}
		t.Topic = names.get(b.Span(readLen(&b, flex)))
		np := readArrayLen(&b, flex)
		if !b.Ok() || int64(np)*6 > int64(len(b.Src)) {
			req.Topics = topics
			return kbin.ErrNotEnoughData
		}
		parts = grow(parts, max(int(np), 0))
		for j := range parts {
			p := &parts[j]
			*p = kmsg.ProduceRequestTopicPartition{Partition: b.Int32()}
			if l := readLen32(&b, flex); l >= 0 {
				p.Records = b.Span(l)
			}
			if flex {
				readTags(&b, &p.UnknownTags)
			}
		}
		t.Partitions = parts
		if flex {
			readTags(&b, &t.UnknownTags)
		}
	}
	req.Topics = topics
	if flex {
		readTags(&b, &req.UnknownTags)
	}
	return b.Complete()
}

// grow returns s with length n, reusing its capacity.
func grow[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}

// readLen reads a string's length as kmsg does: compact (uvarint, plus one)
// when flexible, else int16.
func readLen(b *kbin.Reader, flex bool) int {
	if flex {
		return int(b.Uvarint()) - 1
	}
	return int(b.Int16())
}

// readLen32 reads a bytes field's length: compact when flexible, else int32.
func readLen32(b *kbin.Reader, flex bool) int {
	if flex {
		return int(b.Uvarint()) - 1
	}
	return int(b.Int32())
}

// readArrayLen reads an array length as kmsg does (the reader goes bad when
// fewer bytes remain than the length).
func readArrayLen(b *kbin.Reader, flex bool) int32 {
	if flex {
		return b.CompactArrayLen()
	}
	return b.ArrayLen()
}

// readTags reads a tagged-field section into dst as kmsg does.
func readTags(b *kbin.Reader, dst *kmsg.Tags) {
	*dst = kmsg.Tags{}
	if len(b.Src) > 0 && b.Src[0] == 0 {
		b.Src = b.Src[1:]
		return
	}
	for num := b.Uvarint(); num > 0 && b.Ok(); num-- {
		key, size := b.Uvarint(), b.Uvarint()
		dst.Set(key, b.Span(int(size)))
	}
}

// nameCache interns a connection's topic names: the same bytes give the
// same string, found without allocating. It holds at most maxCachedNames;
// beyond that names are copied each time. It also keeps the last
// transactional id (a transactional producer sends the same one each time)
// and, for the header, the last client id. Reader only.
type nameCache struct {
	m        map[string]string
	txn      *string
	clientID *string
}

// txnID returns a transactional id with b's bytes: the last one when equal.
func (nc *nameCache) txnID(b []byte) *string {
	if nc != nil && nc.txn != nil && *nc.txn == string(b) {
		return nc.txn
	}
	s := string(b)
	if nc != nil {
		nc.txn = &s
	}
	return &s
}

const maxCachedNames = 1024

func (nc *nameCache) get(b []byte) string {
	if nc == nil {
		return string(b)
	}
	if s, ok := nc.m[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if nc.m == nil {
		nc.m = make(map[string]string)
	}
	if len(nc.m) < maxCachedNames {
		nc.m[s] = s
	}
	return s
}
