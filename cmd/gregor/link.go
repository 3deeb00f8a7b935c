package main

// gregor link: cluster links (package link), through Gregor's own links
// API (protocol.LinksKey) on any broker of the cluster.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/clientconfig"
	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

const linkUsage = `usage: gregor link COMMAND [flags]

  create NAME --source HOST:PORT[,…] --topics REGEX [--groups REGEX]
              [--source-config FILE] [--sync-interval 5s]
                      mirror the source cluster's topics matching REGEX here,
                      at the same offsets, and copy the committed offsets of
                      its groups matching --groups; FILE is a Kafka client
                      properties file for the source (security.protocol,
                      sasl.*, ssl.*)
  list                the links
  status NAME         per mirror partition: source end, mirror end, lag;
                      the groups synced and when
  promote NAME [--topics REGEX]
                      mirror up to the source's high watermark, then make the
                      topics writable (the cut-over)
  delete NAME [--force]
                      remove a link whose topics are all promoted (--force:
                      stop mirroring the others and leave them as they are)

Every command takes --brokers HOST:PORT[,…] (Gregor's) and --timeout.`

func linkCmd(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(os.Stdout, linkUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, linkUsage)
		return errUsage
	}
	sub, args := args[0], args[1:]
	var cf clientFlags
	fs := newFlagSet("link "+sub, "", "")
	cf.register(fs)
	source := fs.String("source", "", "the source cluster's bootstrap servers, HOST:PORT[,…] (create)")
	sourceConfig := fs.String("source-config", "", "a Kafka client properties file for the source (create)")
	topics := fs.String("topics", "", "a regular expression of topic names (create; promote: those to promote)")
	groups := fs.String("groups", "", "a regular expression of consumer group names whose offsets are copied (create)")
	syncInterval := fs.Duration("sync-interval", link.DefaultSyncInterval, "how often topics, configs and group offsets are synced (create)")
	force := fs.Bool("force", false, "delete even with mirror topics not promoted (delete)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	name := ""
	if len(pos) > 0 {
		name = pos[0]
	}
	if sub != "list" && name == "" {
		fmt.Fprintln(os.Stderr, linkUsage)
		return errUsage
	}
	op := broker.LinkOp{Op: sub, Name: name}
	switch sub {
	case "create":
		l := &link.Link{Name: name, Topics: *topics, Groups: *groups, SyncIntervalMs: syncInterval.Milliseconds()}
		for _, s := range strings.Split(*source, ",") {
			if s = strings.TrimSpace(s); s != "" {
				l.Source = append(l.Source, s)
			}
		}
		if *sourceConfig != "" {
			props, err := readProperties(*sourceConfig)
			if err != nil {
				return fmt.Errorf("--source-config: %w", err)
			}
			l.SourceConfig = props
		}
		op.Link = l
	case "promote":
		op.Topics = *topics
	case "delete":
		op.Force = *force
	case "list", "status":
	default:
		fmt.Fprintln(os.Stderr, linkUsage)
		return errUsage
	}
	var sec linkSecurity
	if cf.commandConfig != "" {
		props, err := readProperties(cf.commandConfig)
		if err != nil {
			return err
		}
		if sec.tls, sec.sasl, err = clientconfig.Security(props); err != nil {
			return fmt.Errorf("--command-config %s: %w", cf.commandConfig, err)
		}
	}
	ctx, cancel := cf.context()
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		op.TimeoutMs = time.Until(dl).Milliseconds()
	}
	body, err := linkRequest(ctx, cf.brokers, sec, op)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		fmt.Printf("Created link %s from %s mirroring topics %q.\n", name, *source, *topics)
	case "list":
		var out struct{ Links []*link.Link }
		if err := json.Unmarshal(body, &out); err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "LINK\tSOURCE\tTOPICS\tGROUPS\tSYNC-INTERVAL")
		for _, l := range out.Links {
			g := l.Groups
			if g == "" {
				g = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", l.Name, strings.Join(l.Source, ","), l.Topics, g, l.SyncInterval())
		}
		return w.Flush()
	case "status":
		var st link.Status
		if err := json.Unmarshal(body, &st); err != nil {
			return err
		}
		printLinkStatus(&st)
	case "promote":
		var out struct{ Promoted []string }
		if err := json.Unmarshal(body, &out); err != nil {
			return err
		}
		if len(out.Promoted) == 0 {
			fmt.Println("No mirror topic to promote.")
		}
		for _, t := range out.Promoted {
			fmt.Printf("Promoted %s.\n", t)
		}
	case "delete":
		fmt.Printf("Deleted link %s.\n", name)
	}
	return nil
}

func printLinkStatus(st *link.Status) {
	l := st.Link
	fmt.Printf("Link %s: source %s, topics %q", l.Name, strings.Join(l.Source, ","), l.Topics)
	if l.Groups != "" {
		fmt.Printf(", groups %q", l.Groups)
	}
	fmt.Printf(", sync every %s\n", l.SyncInterval())
	if st.Error != "" {
		fmt.Printf("Error: %s\n", st.Error)
	}
	for _, u := range st.Unreached {
		fmt.Printf("Not asked: %s\n", u)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nTOPIC\tSTATE\tPARTITION\tSOURCE-END\tMIRROR-END\tLAG\tNODE\tERROR")
	num := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return fmt.Sprint(n)
	}
	for _, m := range st.Mirrors {
		state := string(m.State)
		if m.SourceDeleted {
			state += "/SOURCE_DELETED"
		}
		if m.Error != "" {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\t%s\n", m.Topic, state, m.Error)
		}
		for _, p := range m.Partitions {
			e := p.Error
			if e == "" {
				e = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.Topic, state, p.Partition, num(p.SourceEnd), num(p.MirrorEnd), num(p.Lag), num(int64(p.Node)), e)
		}
	}
	w.Flush()
	if len(st.Groups) > 0 {
		w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "\nGROUP\tPARTITIONS\tSYNCED")
		for _, g := range st.Groups {
			n := 0
			for _, ps := range g.Offsets {
				n += len(ps)
			}
			when := "-"
			if g.SyncedMs > 0 {
				when = time.UnixMilli(g.SyncedMs).UTC().Format(time.RFC3339)
			}
			if g.TakenOverMs > 0 {
				when += " (committed here since " + time.UnixMilli(g.TakenOverMs).UTC().Format(time.RFC3339) + ": no longer synced)"
			}
			fmt.Fprintf(w, "%s\t%d\t%s\n", g.Group, n, when)
		}
		w.Flush()
	}
}

// linkSecurity is how the link requests' connection is secured: TLS and
// a SASL mechanism, from --command-config (nil: none).
type linkSecurity struct {
	tls  *tls.Config
	sasl sasl.Mechanism
}

// linkRequest sends op to the first of brokers that answers and returns
// the answer's JSON body.
func linkRequest(ctx context.Context, brokers string, sec linkSecurity, op broker.LinkOp) ([]byte, error) {
	body, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, addr := range strings.Split(brokers, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		resp, err := gregorRequest(ctx, addr, sec, &protocol.JSONRequest{APIKey: protocol.LinksKey, Body: body})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		jr := resp.(*protocol.JSONResponse)
		if jr.ErrorCode != 0 {
			msg := kerr.ErrorForCode(jr.ErrorCode).Error()
			if jr.ErrorMessage != nil && *jr.ErrorMessage != "" {
				msg = *jr.ErrorMessage
			}
			return nil, errors.New(msg)
		}
		return jr.Body, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("--brokers is empty")
	}
	return nil, errors.Join(errs...)
}

// gregorRequest sends one of Gregor's own requests (which Kafka clients do
// not know, so not through one) on a connection of its own, over TLS and
// after a SASL exchange when sec asks for them.
func gregorRequest(ctx context.Context, addr string, sec linkSecurity, req kmsg.Request) (kmsg.Response, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if sec.tls != nil {
		tc := sec.tls.Clone()
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tlsConn := tls.Client(c, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		c = tlsConn
	}
	rc := &rawConn{c: c}
	if sec.sasl != nil {
		if err := rc.authenticate(ctx, addr, sec.sasl); err != nil {
			return nil, err
		}
	}
	return rc.roundTrip(req)
}

// rawConn sends requests one at a time on a connection.
type rawConn struct {
	c    net.Conn
	corr int32
}

// authenticate runs a SASL exchange as Kafka clients do: SaslHandshake v1,
// then SaslAuthenticate until the mechanism is done.
func (rc *rawConn) authenticate(ctx context.Context, addr string, m sasl.Mechanism) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, m.Name()
	resp, err := rc.roundTrip(hs)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake: %w", err)
	}
	sess, msg, err := m.Authenticate(ctx, addr)
	if err != nil {
		return err
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 1, msg
		resp, err := rc.roundTrip(auth)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			if ar.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *ar.ErrorMessage)
			}
			return err
		}
		done, next, err := sess.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		msg = next
	}
}

// roundTrip sends req (request header v1, v2 when flexible) and reads its
// answer.
func (rc *rawConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	rc.corr++
	frame := make([]byte, 4, 64)
	frame = kbin.AppendInt16(frame, req.Key())
	frame = kbin.AppendInt16(frame, req.GetVersion())
	frame = kbin.AppendInt32(frame, rc.corr)
	frame = kbin.AppendNullableString(frame, strPtr("gregor-cli"))
	if req.IsFlexible() {
		frame = kbin.AppendUvarint(frame, 0) // header tags
	}
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := rc.c.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the broker closed the connection: not a Gregor broker, one without cluster links, or one that wants another security protocol (--command-config)")
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("answer of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc.c, buf); err != nil {
		return nil, err
	}
	r := kbin.Reader{Src: buf}
	if corr := r.Int32(); corr != rc.corr {
		return nil, fmt.Errorf("answer to request %d", corr)
	}
	if req.IsFlexible() {
		for tags := r.Uvarint(); tags > 0 && r.Ok(); tags-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, err
	}
	return resp, nil
}

func strPtr(s string) *string { return &s }
