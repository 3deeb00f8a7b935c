package main

// gregor link: cluster links (package link), through Gregor's own links
// API (protocol.LinksKey) on any broker of the cluster.

import (
	"context"
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
	"github.com/gregor-broker/gregor/link"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
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
	if cf.commandConfig != "" {
		// The link requests go over a bare connection (Gregor's own API
		// key, which Kafka clients refuse to send): no TLS or SASL yet.
		// The admin HTTP API (/admin/links) serves the same operations.
		return errors.New("gregor link: --command-config is not supported yet; use a PLAINTEXT listener or the admin HTTP API (/admin/links)")
	}
	ctx, cancel := cf.context()
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		op.TimeoutMs = time.Until(dl).Milliseconds()
	}
	body, err := linkRequest(ctx, cf.brokers, op)
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
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nTOPIC\tSTATE\tPARTITION\tSOURCE-END\tMIRROR-END\tLAG")
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
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t- (%s)\n", m.Topic, state, m.Error)
		}
		for _, p := range m.Partitions {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", m.Topic, state, p.Partition, num(p.SourceEnd), num(p.MirrorEnd), num(p.Lag))
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

// linkRequest sends op to the first of brokers that answers and returns
// the answer's JSON body.
func linkRequest(ctx context.Context, brokers string, op broker.LinkOp) ([]byte, error) {
	body, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, addr := range strings.Split(brokers, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		resp, err := gregorRequest(ctx, addr, &protocol.JSONRequest{APIKey: protocol.LinksKey, Body: body})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if resp.ErrorCode != 0 {
			msg := kerr.ErrorForCode(resp.ErrorCode).Error()
			if resp.ErrorMessage != nil && *resp.ErrorMessage != "" {
				msg = *resp.ErrorMessage
			}
			return nil, errors.New(msg)
		}
		return resp.Body, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("--brokers is empty")
	}
	return nil, errors.Join(errs...)
}

// gregorRequest sends one of Gregor's own requests (which Kafka clients do
// not know, so not through one) on a connection of its own: request
// header v2, response header v1.
func gregorRequest(ctx context.Context, addr string, req *protocol.JSONRequest) (*protocol.JSONResponse, error) {
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
	const correlationID = 1
	frame := make([]byte, 4, 64+len(req.Body))
	frame = kbin.AppendInt16(frame, req.Key())
	frame = kbin.AppendInt16(frame, 0)
	frame = kbin.AppendInt32(frame, correlationID)
	frame = kbin.AppendNullableString(frame, strPtr("gregor-cli"))
	frame = kbin.AppendUvarint(frame, 0) // header tags
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := c.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the broker closed the connection: not a Gregor broker, or one without cluster links")
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("answer of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		return nil, err
	}
	r := kbin.Reader{Src: buf}
	if corr := r.Int32(); corr != correlationID {
		return nil, fmt.Errorf("answer to request %d", corr)
	}
	for tags := r.Uvarint(); tags > 0 && r.Ok(); tags-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
	resp := req.ResponseKind().(*protocol.JSONResponse)
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, err
	}
	return resp, nil
}

func strPtr(s string) *string { return &s }
