package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// RequestHeader is a decoded Kafka request header (v1 or v2).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	// Flexible is true when the header carried tagged fields (v2).
	Flexible bool
}

// ErrShortHeader is returned when a frame is too short for its header.
var ErrShortHeader = errors.New("request header truncated")

// ParseRequestHeaderPrefix reads the fixed part of a header: key, version and
// correlation id. It lets the caller decide, before anything else is parsed,
// whether the key and version are handled.
func ParseRequestHeaderPrefix(frame []byte) (key, version int16, correlationID int32, err error) {
	if len(frame) < 8 {
		return 0, 0, 0, ErrShortHeader
	}
	return int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:])),
		int32(binary.BigEndian.Uint32(frame[4:])), nil
}

// ParseRequestHeader decodes a request header and returns the body that
// follows it. flexible says whether the request's version uses header v2
// (tagged fields after the client id).
func ParseRequestHeader(frame []byte, flexible bool) (RequestHeader, []byte, error) {
	var h RequestHeader
	var err error
	h.Key, h.Version, h.CorrelationID, err = ParseRequestHeaderPrefix(frame)
	if err != nil {
		return h, nil, err
	}
	r := reader{b: frame[8:]}
	h.ClientID = r.nullableString()
	if flexible {
		h.Flexible = true
		r.skipTags()
	}
	if r.err != nil {
		return h, nil, fmt.Errorf("request header: %w", r.err)
	}
	return h, r.b, nil
}

// AppendResponseHeader appends a response header: v0 (correlation id) or,
// when flexible, v1 (correlation id and an empty tagged-field section).
func AppendResponseHeader(dst []byte, correlationID int32, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// reader is a bounds-checked big-endian reader; the first failure sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = ErrShortHeader
	}
	r.b = nil
}

func (r *reader) int16() int16 {
	if len(r.b) < 2 {
		r.fail()
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.b))
	r.b = r.b[2:]
	return v
}

func (r *reader) nullableString() *string {
	n := r.int16()
	if r.err != nil || n < 0 {
		return nil
	}
	if int(n) > len(r.b) {
		r.fail()
		return nil
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return &s
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) skipTags() {
	count := r.uvarint()
	for i := uint64(0); i < count && r.err == nil; i++ {
		r.uvarint() // tag
		size := r.uvarint()
		if r.err != nil {
			return
		}
		if size > uint64(len(r.b)) {
			r.fail()
			return
		}
		r.b = r.b[size:]
	}
}
