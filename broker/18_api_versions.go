package broker

// ApiVersions: v0-5
//
// Built from the handler registry. A request of a version newer than Gregor
// knows is answered (in server.go) with a v0 response carrying
// UNSUPPORTED_VERSION and the supported ranges, so the client can retry
// with a version both sides know. v3+ validates the client software name
// and version (INVALID_REQUEST). v5 (KIP-1242, what Kafka 4.4 clients send
// first) names the cluster and node the client believes it reached, or
// null and -1 while bootstrapping: one without the other is
// INVALID_REQUEST, and a cluster id or node id that is not this broker's
// is REBOOTSTRAP_REQUIRED, so a client whose address now reaches another
// broker finds out; both answers carry no keys, as Kafka's do. v3+ lists
// the supported and finalized features (features.go). Gregor's own APIs
// (protocol.LinksKey) are listed only to another broker's inter-broker
// client (fromPeer), so that a peer request (peerRequest) may send them;
// a Kafka client never sees them.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions, 0, 5, (*Broker).handleApiVersions) }

var clientSoftwareRe = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(r *request) (kmsg.Response, error) {
	req := r.msg.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!clientSoftwareRe.MatchString(req.ClientSoftwareName) || !clientSoftwareRe.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.Version >= 3 && r.conn != nil {
		r.conn.softwareName, r.conn.softwareVersion = req.ClientSoftwareName, req.ClientSoftwareVersion
	}
	if req.Version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID == -1):
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		case req.ClusterID != nil && (*req.ClusterID != b.clusterID || req.NodeID != b.nodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp.ApiKeys = apiKeys(fromPeer(r))
	b.setFeatures(resp)
	return resp, nil
}

// apiKeys returns the keys advertised, Gregor's own APIs too when
// withOwn.
func apiKeys(withOwn bool) []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	hs := advertisedKeys()
	if withOwn {
		for _, h := range handlers {
			if h.hidden {
				hs = append(hs, h)
			}
		}
	}
	for _, h := range hs {
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
	resp.ApiKeys = apiKeys(false)
	return resp
}
