// Package protocol is Gregor's Kafka wire layer: size-prefixed framing,
// request and response headers, and the encoding of responses into parts
// that a connection writes with writev and sendfile.
//
// It knows nothing of disks or topics. Request and response bodies are
// decoded and encoded with github.com/twmb/franz-go/pkg/kmsg; this package
// adds only what kmsg leaves to a server, and reads and writes the wire's
// primitives with kmsg's own github.com/twmb/franz-go/pkg/kbin.
//
// # Framing
//
// Every request and response is an int32 big-endian size followed by that
// many bytes. ReadFrameSize refuses a negative size or one above the
// configured cap (Kafka's socket.request.max.bytes, 100 MiB by default)
// before anything is allocated; ReadFrameInto then reads the body into a
// pooled buffer, which PutFrame gives back once nothing refers to it.
//
// # Headers
//
// Request header v1 is api_key int16, api_version int16, correlation_id
// int32, client_id nullable string (int16 length). Header v2, used by
// flexible (KIP-482) request versions, appends tagged fields. Response header
// v0 is correlation_id; v1 appends tagged fields. ApiVersions responses
// always use header v0 so that a client can parse them before it knows the
// broker's versions.
//
// # Zero-copy fetch
//
// A Fetch response's record bytes are not copied into the encoded response:
// EncodeFetchResponse leaves them as file regions in an Out, which the
// connection sends with sendfile(2) on Linux (other systems copy the
// regions: out_other.go). Its output is byte for byte what kmsg encodes
// (TestEncodeFetchResponse_MatchesKmsg).
//
// # Locks
//
// The frame pool's mutex is its only lock, a leaf in the program's lock
// order, which is written in docs/LOCK_ORDER.md.
package protocol
