package protocol

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Gregor's own APIs, for its command-line tool: keys Kafka does not use,
// never advertised in ApiVersions (a Kafka client never sees them), with
// a JSON document as body. Each is a flexible v0 request: request header
// v2, a compact-bytes body and tagged fields; its response carries an
// error code, an error message and a JSON body.

// LinksKey is the API of cluster links (`gregor link …`).
const LinksKey int16 = 32000

// GregorRequestForKey returns a new request of one of Gregor's own keys;
// nil for any other key.
func GregorRequestForKey(key int16) kmsg.Request {
	if key == LinksKey {
		return &JSONRequest{APIKey: key}
	}
	return nil
}

// JSONRequest is a request of one of Gregor's own APIs.
type JSONRequest struct {
	APIKey  int16
	Version int16
	Body    []byte // JSON
}

func (v *JSONRequest) Key() int16               { return v.APIKey }
func (v *JSONRequest) MaxVersion() int16        { return 0 }
func (v *JSONRequest) SetVersion(version int16) { v.Version = version }
func (v *JSONRequest) GetVersion() int16        { return v.Version }
func (v *JSONRequest) IsFlexible() bool         { return true }
func (v *JSONRequest) ResponseKind() kmsg.Response {
	return &JSONResponse{APIKey: v.APIKey, Version: v.Version}
}

// AppendTo appends the body: compact bytes, then no tagged fields.
func (v *JSONRequest) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactBytes(dst, v.Body)
	return kbin.AppendUvarint(dst, 0)
}

// ReadFrom decodes the body.
func (v *JSONRequest) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	v.Body = b.CompactBytes()
	skipTags(&b)
	if err := b.Complete(); err != nil {
		return fmt.Errorf("gregor api %d: %w", v.APIKey, err)
	}
	return nil
}

// JSONResponse is the answer to a JSONRequest.
type JSONResponse struct {
	APIKey       int16
	Version      int16
	ErrorCode    int16
	ErrorMessage *string
	Body         []byte // JSON; empty on error
}

func (v *JSONResponse) Key() int16               { return v.APIKey }
func (v *JSONResponse) MaxVersion() int16        { return 0 }
func (v *JSONResponse) SetVersion(version int16) { v.Version = version }
func (v *JSONResponse) GetVersion() int16        { return v.Version }
func (v *JSONResponse) IsFlexible() bool         { return true }
func (v *JSONResponse) Throttle() (int32, bool)  { return 0, false }
func (v *JSONResponse) SetThrottle(int32)        {}
func (v *JSONResponse) RequestKind() kmsg.Request {
	return &JSONRequest{APIKey: v.APIKey, Version: v.Version}
}

// AppendTo appends the body: error code, compact nullable error message,
// compact bytes, no tagged fields.
func (v *JSONResponse) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt16(dst, v.ErrorCode)
	dst = kbin.AppendCompactNullableString(dst, v.ErrorMessage)
	dst = kbin.AppendCompactBytes(dst, v.Body)
	return kbin.AppendUvarint(dst, 0)
}

// ReadFrom decodes the body.
func (v *JSONResponse) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	v.ErrorCode = b.Int16()
	v.ErrorMessage = b.CompactNullableString()
	v.Body = b.CompactBytes()
	skipTags(&b)
	if err := b.Complete(); err != nil {
		return fmt.Errorf("gregor api %d response: %w", v.APIKey, err)
	}
	return nil
}
