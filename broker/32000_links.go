package broker

// Links (Gregor's own API, key 32000, v0; protocol.LinksKey): what
// `gregor link` asks, on any broker, and what a broker gathering a link's
// status asks the others (node_status: that broker's share,
// link.Manager.NodeStatus). Advertised in ApiVersions only to another
// broker's inter-broker client (fromPeer). The
// body is a JSON linkOp; the answer's body the operation's JSON result,
// or an error code and message: INVALID_REQUEST for a bad or conflicting
// request, RESOURCE_NOT_FOUND for an unknown link,
// CLUSTER_AUTHORIZATION_FAILED without ALTER (create, promote, delete) or
// DESCRIBE (list, status) on the cluster, UNKNOWN_SERVER_ERROR otherwise.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/security/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	handlers[protocol.LinksKey] = handler{key: kmsg.Key(protocol.LinksKey), fn: (*Broker).handleLinks, async: true, hidden: true}
}

// LinkOp is one operation of the links API.
type LinkOp struct {
	Op        string     `json:"op"` // create, list, status, node_status, promote, delete
	Link      *link.Link `json:"link,omitempty"`
	Name      string     `json:"name,omitempty"`
	Topics    string     `json:"topics,omitempty"` // promote: a pattern; all when empty
	Force     bool       `json:"force,omitempty"`  // delete
	TimeoutMs int64      `json:"timeout_ms,omitempty"`
}

// maxLinkOpTimeout bounds how long one operation may wait (a promotion).
const maxLinkOpTimeout = 10 * time.Minute

func (b *Broker) handleLinks(r *request) (kmsg.Response, error) {
	req := r.msg.(*protocol.JSONRequest)
	resp := req.ResponseKind().(*protocol.JSONResponse)
	var op LinkOp
	if err := json.Unmarshal(req.Body, &op); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("links: malformed request: "+err.Error())
		return resp, nil
	}
	allowed := func(a acl.Operation) bool { return b.allowed(r, a, acl.Cluster, acl.ClusterName) }
	var msg string
	resp.ErrorCode, msg, resp.Body = b.linkOp(r.ctx, allowed, op)
	if resp.ErrorCode != 0 {
		resp.ErrorMessage = kmsg.StringPtr(msg)
	}
	return resp, nil
}

// Links runs one links operation as c would over the wire (the admin
// HTTP API's entry): the error code and message, or the JSON result.
func (b *Broker) Links(ctx context.Context, c Caller, op LinkOp) (code int16, msg string, body []byte) {
	return b.linkOp(ctx, func(a acl.Operation) bool { return b.Authorize(c, a, acl.Cluster, acl.ClusterName) }, op)
}

func (b *Broker) linkOp(ctx context.Context, allowed func(acl.Operation) bool, op LinkOp) (int16, string, []byte) {
	need := acl.Alter
	if op.Op == "list" || op.Op == "status" || op.Op == "node_status" {
		need = acl.Describe
	}
	if !allowed(need) {
		return kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Description, nil
	}
	m := b.links.Load()
	if m == nil {
		return kerr.BrokerNotAvailable.Code, "links: the broker is starting", nil
	}
	timeout := time.Minute
	if op.TimeoutMs > 0 {
		timeout = min(time.Duration(op.TimeoutMs)*time.Millisecond, maxLinkOpTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out any
	var err error
	switch op.Op {
	case "create":
		if op.Link == nil {
			return kerr.InvalidRequest.Code, "links: create without a link", nil
		}
		err = m.Create(ctx, op.Link)
		out = op.Link
	case "list":
		out = map[string]any{"links": m.List()}
	case "status":
		out, err = m.Status(ctx, op.Name)
	case "node_status":
		out, err = m.NodeStatus(op.Name)
	case "promote":
		var promoted []string
		promoted, err = m.Promote(ctx, op.Name, op.Topics)
		out = map[string]any{"promoted": promoted}
	case "delete":
		err = m.Delete(ctx, op.Name, op.Force)
		out = map[string]any{}
	default:
		return kerr.InvalidRequest.Code, fmt.Sprintf("links: unknown operation %q", op.Op), nil
	}
	switch {
	case errors.Is(err, link.ErrNotFound):
		return kerr.ResourceNotFound.Code, err.Error(), nil
	case errors.Is(err, link.ErrInvalid), errors.Is(err, link.ErrExists), errors.Is(err, link.ErrActiveMirrors):
		return kerr.InvalidRequest.Code, err.Error(), nil
	case err != nil:
		b.log.Warn("links: operation failed", "op", op.Op, "name", op.Name, "err", err)
		return kerr.UnknownServerError.Code, err.Error(), nil
	}
	body, err := json.Marshal(out)
	if err != nil {
		return kerr.UnknownServerError.Code, err.Error(), nil
	}
	return 0, "", body
}
