package broker

// Links (Gregor's own API, key 32000, v0; protocol.LinksKey): what
// `gregor link` asks, on any broker. Not advertised in ApiVersions. The
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
	Op        string     `json:"op"` // create, list, status, promote, delete
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
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp, nil
	}
	var op LinkOp
	if err := json.Unmarshal(req.Body, &op); err != nil {
		return fail(kerr.InvalidRequest.Code, "links: malformed request: "+err.Error())
	}
	need := acl.Alter
	if op.Op == "list" || op.Op == "status" {
		need = acl.Describe
	}
	if !b.allowed(r, need, acl.Cluster, acl.ClusterName) {
		return fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Description)
	}
	m := b.links.Load()
	if m == nil {
		return fail(kerr.BrokerNotAvailable.Code, "links: the broker is starting")
	}
	timeout := time.Minute
	if op.TimeoutMs > 0 {
		timeout = min(time.Duration(op.TimeoutMs)*time.Millisecond, maxLinkOpTimeout)
	}
	ctx, cancel := context.WithTimeout(r.ctx, timeout)
	defer cancel()
	var out any
	var err error
	switch op.Op {
	case "create":
		if op.Link == nil {
			return fail(kerr.InvalidRequest.Code, "links: create without a link")
		}
		err = m.Create(ctx, op.Link)
		out = op.Link
	case "list":
		out = map[string]any{"links": m.List()}
	case "status":
		out, err = m.Status(ctx, op.Name)
	case "promote":
		var promoted []string
		promoted, err = m.Promote(ctx, op.Name, op.Topics)
		out = map[string]any{"promoted": promoted}
	case "delete":
		err = m.Delete(ctx, op.Name, op.Force)
		out = map[string]any{}
	default:
		return fail(kerr.InvalidRequest.Code, fmt.Sprintf("links: unknown operation %q", op.Op))
	}
	switch {
	case errors.Is(err, link.ErrNotFound):
		return fail(kerr.ResourceNotFound.Code, err.Error())
	case errors.Is(err, link.ErrInvalid), errors.Is(err, link.ErrExists), errors.Is(err, link.ErrActiveMirrors):
		return fail(kerr.InvalidRequest.Code, err.Error())
	case err != nil:
		b.log.Warn("links: operation failed", "op", op.Op, "name", op.Name, "err", err)
		return fail(kerr.UnknownServerError.Code, err.Error())
	}
	if resp.Body, err = json.Marshal(out); err != nil {
		return nil, err
	}
	return resp, nil
}
