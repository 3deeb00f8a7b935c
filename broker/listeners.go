package broker

// Listeners, as Kafka configures them: listeners names each endpoint with a
// listener name (PLAINTEXT://127.0.0.1:9092, SASL_SSL://:9094, or a custom
// name mapped to a security protocol by listener.security.protocol.map);
// advertised.listeners gives the address clients are told for each;
// inter.broker.listener.name is the one the other brokers of a cluster use.
// Without listeners, Config.Listen (--listen) is one PLAINTEXT listener and
// Config.Advertise its advertised address, as before.
//
// In cluster mode with embedded etcd (controller.quorum.voters), a listener
// named in controller.listener.names (CONTROLLER unless set) is not a
// Kafka listener: the node's etcd member binds its peer port there, and
// controller.quorum.voters stays the address the member advertises and its
// peers dial, as a KRaft controller binds its CONTROLLER listener while the
// voters list the address others reach it at. Without such a listener the
// member binds its voter address, as before.
//
// A client is told the addresses of the listener it came in on: Metadata,
// DescribeCluster, FindCoordinator and the KIP-951 leader hints of Produce
// and Fetch are rewritten per connection (rewriteEndpoints), from this
// broker's listeners and, in a cluster, from the listeners every broker
// registers in etcd.

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/metadata"
	"github.com/gregor-broker/gregor/security/authn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listener is one configured endpoint.
type listener struct {
	name     string // listener name, upper case
	protocol string // security protocol
	bind     string // host:port to bind
	ln       net.Listener
	advHost  string
	advPort  int32
	tls      *authn.TLS // SSL and SASL_SSL
	sasl     *saslState // SASL_PLAINTEXT and SASL_SSL
}

func (l *listener) usesTLS() bool { return l.protocol == config.SSL || l.protocol == config.SASLSSL }
func (l *listener) usesSASL() bool {
	return l.protocol == config.SASLPlaintext || l.protocol == config.SASLSSL
}

// listenerSpec is one NAME://host:port entry.
type listenerSpec struct {
	name, host, port string
}

// parseListenerList parses listeners or advertised.listeners.
func parseListenerList(s string) ([]listenerSpec, error) {
	var out []listenerSpec
	seen := map[string]bool{}
	for _, e := range config.SplitList(s) {
		name, addr, ok := strings.Cut(e, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME://host:port", e)
		}
		name = strings.ToUpper(name)
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", e, err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("%q: bad port", e)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		seen[name] = true
		out = append(out, listenerSpec{name: name, host: host, port: port})
	}
	return out, nil
}

// protocolMap parses listener.security.protocol.map (NAME:PROTOCOL,…);
// the four protocol names always map to themselves.
func protocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range []string{config.Plaintext, config.SSL, config.SASLPlaintext, config.SASLSSL} {
		m[p] = p
	}
	for _, e := range config.SplitList(s) {
		name, proto, ok := strings.Cut(e, ":")
		proto = strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !slices.Contains([]string{config.Plaintext, config.SSL, config.SASLPlaintext, config.SASLSSL}, proto) {
			return nil, fmt.Errorf("listener.security.protocol.map: %q: want NAME:PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL", e)
		}
		m[strings.ToUpper(strings.TrimSpace(name))] = proto
	}
	return m, nil
}

// controllerListenerNames returns controller.listener.names, upper case;
// CONTROLLER when unset.
func controllerListenerNames(props map[string]string) []string {
	names := config.SplitList(props["controller.listener.names"])
	if len(names) == 0 {
		return []string{"CONTROLLER"}
	}
	for i := range names {
		names[i] = strings.ToUpper(names[i])
	}
	return names
}

// splitControllerListener takes the controller listener out of specs when
// the node runs an embedded etcd member (controller.quorum.voters), and
// returns the others and the controller listener (nil if there is none).
// It must be plain TCP: etcd's peer URLs here are http.
func splitControllerListener(props map[string]string, pm map[string]string, specs []listenerSpec) ([]listenerSpec, *listenerSpec, error) {
	if props["controller.quorum.voters"] == "" {
		return specs, nil, nil
	}
	names := controllerListenerNames(props)
	var kafka []listenerSpec
	var ctrl *listenerSpec
	for _, s := range specs {
		if !slices.Contains(names, s.name) {
			kafka = append(kafka, s)
			continue
		}
		if ctrl != nil {
			return nil, nil, fmt.Errorf("listeners: %s and %s are both controller listeners; the etcd member binds one", ctrl.name, s.name)
		}
		if p, _ := strconv.Atoi(s.port); p == 0 {
			return nil, nil, fmt.Errorf("listeners: controller listener %s needs a fixed port", s.name)
		}
		ctrl = &s
	}
	if ctrl != nil {
		if p, ok := pm[ctrl.name]; ok && p != config.Plaintext {
			return nil, nil, fmt.Errorf("listeners: controller listener %s is %s; the etcd peer listener is PLAINTEXT only", ctrl.name, p)
		}
	}
	return kafka, ctrl, nil
}

// buildListeners turns the configuration into listeners (not yet bound)
// and names the inter-broker one; ctrl is the controller listener (where
// the etcd member binds its peer port), nil without one.
func (b *Broker) buildListeners() (ls []*listener, inter string, ctrl *listenerSpec, err error) {
	pm, err := protocolMap(b.cfg.Props["listener.security.protocol.map"])
	if err != nil {
		return nil, "", nil, err
	}
	var specs []listenerSpec
	if v := b.cfg.Props["listeners"]; v != "" {
		if specs, err = parseListenerList(v); err != nil {
			return nil, "", nil, fmt.Errorf("listeners: %w", err)
		}
		if specs, ctrl, err = splitControllerListener(b.cfg.Props, pm, specs); err != nil {
			return nil, "", nil, err
		}
	} else {
		host, port, err := net.SplitHostPort(b.cfg.Listen)
		if err != nil {
			return nil, "", nil, fmt.Errorf("listen %q: %w", b.cfg.Listen, err)
		}
		specs = []listenerSpec{{name: config.Plaintext, host: host, port: port}}
	}
	if len(specs) == 0 {
		return nil, "", nil, fmt.Errorf("listeners: none configured")
	}
	for _, s := range specs {
		proto, ok := pm[s.name]
		if !ok {
			return nil, "", nil, fmt.Errorf("listener %s has no security protocol in listener.security.protocol.map", s.name)
		}
		l := &listener{name: s.name, protocol: proto, bind: net.JoinHostPort(s.host, s.port)}
		if l.usesTLS() {
			props, prefixed := b.listenerProps(l.name)
			if l.tls, err = authn.NewTLS(props, prefixed, l.protocol == config.SASLSSL, b.log.With("listener", l.name)); err != nil {
				return nil, "", nil, fmt.Errorf("listener %s: %w", l.name, err)
			}
		}
		if l.usesSASL() {
			if l.sasl, err = b.newSASLState(l.name); err != nil {
				return nil, "", nil, fmt.Errorf("listener %s: %w", l.name, err)
			}
		}
		ls = append(ls, l)
	}
	inter = strings.ToUpper(b.cfg.Props["inter.broker.listener.name"])
	switch {
	case inter != "":
		if !slices.ContainsFunc(ls, func(l *listener) bool { return l.name == inter }) {
			return nil, "", nil, fmt.Errorf("inter.broker.listener.name %s is not among the listeners", inter)
		}
	case b.cfg.Props["security.inter.broker.protocol"] != "":
		p := strings.ToUpper(b.cfg.Props["security.inter.broker.protocol"])
		i := slices.IndexFunc(ls, func(l *listener) bool { return l.protocol == p })
		if i < 0 {
			return nil, "", nil, fmt.Errorf("security.inter.broker.protocol %s: no listener uses it", p)
		}
		inter = ls[i].name
	default:
		inter = ls[0].name
		if i := slices.IndexFunc(ls, func(l *listener) bool { return l.name == config.Plaintext }); i >= 0 {
			inter = config.Plaintext
		}
	}
	return ls, inter, ctrl, nil
}

// listenerProps returns the broker properties as a listener sees them:
// listener.name.<name>.<property> overrides <property>, as in Kafka.
// prefixed tells whether a property was given for the listener itself.
func (b *Broker) listenerProps(name string) (map[string]string, func(string) bool) {
	out := map[string]string{}
	set := map[string]bool{}
	prefix := "listener.name." + strings.ToLower(name) + "."
	for k, v := range b.cfg.Props {
		if !strings.HasPrefix(k, "listener.name.") {
			out[k] = v
		}
	}
	for k, v := range b.cfg.Props {
		if strings.HasPrefix(k, prefix) {
			out[strings.TrimPrefix(k, prefix)] = v
			set[strings.TrimPrefix(k, prefix)] = true
		}
	}
	return out, func(k string) bool { return set[k] }
}

// bindListeners binds every listener and works out its advertised address.
func (b *Broker) bindListeners(ls []*listener) error {
	adv := map[string]listenerSpec{}
	if v := b.cfg.Props["advertised.listeners"]; v != "" {
		specs, err := parseListenerList(v)
		if err != nil {
			return fmt.Errorf("advertised.listeners: %w", err)
		}
		ctrl := controllerListenerNames(b.cfg.Props)
		for _, s := range specs {
			if b.srv.peerListen != "" && slices.Contains(ctrl, s.name) {
				continue // the voters hold the controller listener's address
			}
			if !slices.ContainsFunc(ls, func(l *listener) bool { return l.name == s.name }) {
				return fmt.Errorf("advertised.listeners: %s is not among the listeners", s.name)
			}
			adv[s.name] = s
		}
	}
	for i, l := range ls {
		ln, err := net.Listen("tcp", l.bind)
		if err != nil {
			for _, o := range ls[:i] {
				o.ln.Close()
			}
			return fmt.Errorf("listener %s: %w", l.name, err)
		}
		l.ln = ln
		addr := ln.Addr().String()
		if s, ok := adv[l.name]; ok {
			addr = net.JoinHostPort(s.host, s.port)
		} else if b.cfg.Props["listeners"] == "" && b.cfg.Advertise != "" {
			addr = b.cfg.Advertise
		}
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p <= 0 || p > 65535 {
			for _, o := range ls[:i+1] {
				o.ln.Close()
			}
			return fmt.Errorf("advertise %q: bad address", addr)
		}
		if host == "" {
			host, _ = os.Hostname()
		}
		l.advHost, l.advPort = host, int32(p)
	}
	return nil
}

// advertisedEndpoints is what this broker registers in a cluster: every
// listener's advertised address by listener name.
func (b *Broker) advertisedEndpoints() map[string]metadata.Endpoint {
	m := map[string]metadata.Endpoint{}
	for _, l := range b.srv.listeners {
		m[l.name] = metadata.Endpoint{Host: l.advHost, Port: l.advPort}
	}
	return m
}

// Listeners returns the names of the listeners, in configuration order.
func (b *Broker) Listeners() []string {
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	var names []string
	for _, l := range b.srv.listeners {
		names = append(names, l.name)
	}
	return names
}

// ListenerAddr returns the bound address of the named listener (for
// listeners=…://127.0.0.1:0), or nil.
func (b *Broker) ListenerAddr(name string) net.Addr {
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	for _, l := range b.srv.listeners {
		if l.name == strings.ToUpper(name) && l.ln != nil {
			return l.ln.Addr()
		}
	}
	return nil
}

// endpointOf returns node's address on the named listener, and false when
// the node has none under that name (a broker registered before listeners
// were, say): the caller keeps the inter-broker address.
func (b *Broker) endpointOf(node int32, name string) (string, int32, bool) {
	if node == b.nodeID {
		for _, l := range b.srv.listeners {
			if l.name == name {
				return l.advHost, l.advPort, true
			}
		}
		return "", 0, false
	}
	if b.cluster == nil {
		return "", 0, false
	}
	br, ok := b.cluster.node.Metadata().Brokers[node]
	if !ok {
		return "", 0, false
	}
	e, ok := br.Listeners[name]
	return e.Host, e.Port, ok
}

// rewriteEndpoints replaces the broker addresses in a response with those
// of the listener the request came in on. Nothing changes on the
// inter-broker listener, whose addresses are the ones the metadata holds.
func (b *Broker) rewriteEndpoints(r *request, resp kmsg.Response) {
	if r == nil || r.conn == nil || r.conn.ls == nil || r.conn.ls.name == b.srv.interName || resp == nil {
		return
	}
	name := r.conn.ls.name
	fix := func(node int32, host *string, port *int32) {
		if h, p, ok := b.endpointOf(node, name); ok {
			*host, *port = h, p
		}
	}
	switch m := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range m.Brokers {
			fix(m.Brokers[i].NodeID, &m.Brokers[i].Host, &m.Brokers[i].Port)
		}
	case *kmsg.DescribeClusterResponse:
		for i := range m.Brokers {
			fix(m.Brokers[i].NodeID, &m.Brokers[i].Host, &m.Brokers[i].Port)
		}
	case *kmsg.FindCoordinatorResponse:
		if m.NodeID >= 0 && m.Host != "" {
			fix(m.NodeID, &m.Host, &m.Port)
		}
		for i := range m.Coordinators {
			if c := &m.Coordinators[i]; c.NodeID >= 0 && c.Host != "" {
				fix(c.NodeID, &c.Host, &c.Port)
			}
		}
	case *kmsg.ProduceResponse:
		for i := range m.Brokers {
			fix(m.Brokers[i].NodeID, &m.Brokers[i].Host, &m.Brokers[i].Port)
		}
	case *kmsg.FetchResponse:
		for i := range m.Brokers {
			fix(m.Brokers[i].NodeID, &m.Brokers[i].Host, &m.Brokers[i].Port)
		}
	}
}

// listenersValue and advertisedListenersValue are what DescribeConfigs
// reports for listeners and advertised.listeners.
func (b *Broker) listenersValue() string {
	var parts []string
	for _, l := range b.srv.listeners {
		parts = append(parts, l.name+"://"+l.bind)
	}
	if b.srv.peerListen != "" {
		parts = append(parts, b.srv.peerName+"://"+b.srv.peerListen)
	}
	return strings.Join(parts, ",")
}

func (b *Broker) advertisedListenersValue() string {
	var parts []string
	for _, l := range b.srv.listeners {
		parts = append(parts, l.name+"://"+net.JoinHostPort(l.advHost, strconv.Itoa(int(l.advPort))))
	}
	return strings.Join(parts, ",")
}
