package broker

// ApiVersions: v0-4
//
// Built from the handler registry. A request of a version newer than Gregor
// knows is answered (in server.go) with a v0 response carrying
// UNSUPPORTED_VERSION and the supported ranges, so the client can retry
// with a version both sides know. v3+ validates the client software name
// and version (INVALID_REQUEST).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions, 0, 4, (*Broker).handleApiVersions) }

var clientSoftwareRe = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!clientSoftwareRe.MatchString(req.ClientSoftwareName) || !clientSoftwareRe.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = apiKeys()
	return resp, nil
}

func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, h := range advertisedKeys() {
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(h.key), MinVersion: h.min, MaxVersion: h.max})
	}
	return keys
}

// apiVersionsUnsupported is the v0 answer to an ApiVersions request of an
// unknown version.
func apiVersionsUnsupported() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiKeys()
	return resp
}
