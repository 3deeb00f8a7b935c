package protocol

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
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
	r := kbin.Reader{Src: frame}
	return r.Int16(), r.Int16(), r.Int32(), nil
}

// ParseRequestHeader decodes a request header and returns the body that
// follows it. flexible says whether the request's version uses header v2
// (tagged fields after the client id).
func ParseRequestHeader(frame []byte, flexible bool) (RequestHeader, []byte, error) {
	return ParseRequestHeaderReuse(frame, flexible, nil)
}

// ParseRequestHeaderReuse is ParseRequestHeader, except that when the
// header's client id equals *last the returned ClientID is last itself
// rather than a new copy: a connection passing its previous request's
// client id decodes the header without allocating. last may be nil; the
// string it points to must not be modified.
func ParseRequestHeaderReuse(frame []byte, flexible bool, last *string) (RequestHeader, []byte, error) {
	var h RequestHeader
	var err error
	h.Key, h.Version, h.CorrelationID, err = ParseRequestHeaderPrefix(frame)
	if err != nil {
		return h, nil, err
	}
	r := kbin.Reader{Src: frame[8:]}
	if l := r.Int16(); l >= 0 {
		b := r.Span(int(l))
		if last != nil && r.Ok() && *last == string(b) { // compared without a copy
			h.ClientID = last
		} else {
			id := string(b)
			h.ClientID = &id
		}
	}
	if flexible {
		h.Flexible = true
		skipTags(&r)
	}
	if !r.Ok() {
		return h, nil, fmt.Errorf("request header: %w", ErrShortHeader)
	}
	return h, r.Src, nil
}

// AppendResponseHeader appends a response header: v0 (correlation id) or,
// when flexible, v1 (correlation id and an empty tagged-field section).
func AppendResponseHeader(dst []byte, correlationID int32, flexible bool) []byte {
	dst = kbin.AppendInt32(dst, correlationID)
	if flexible {
		dst = kbin.AppendUvarint(dst, 0) // no tagged fields
	}
	return dst
}

// skipTags skips a tagged-field section: a count, then each field's tag
// and length-prefixed value. A truncated section invalidates r.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint() // tag
		r.Span(int(r.Uvarint()))
	}
}
