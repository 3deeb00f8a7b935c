package broker

// The schema registry (package schemaregistry): Confluent Schema Registry's
// REST API on the listener schema.registry.listeners names (an http:// URL,
// e.g. http://127.0.0.1:8081), with its state in the topic _schemas (one
// partition, compacted, as Confluent's kafkastore.topic), created on first
// use. schemasLog gives the registry that partition: Read returns its
// records up to the high watermark; Append writes one record only while
// the log end is the one the registry read, so two writers never give out
// the same id, and returns once the record is committed.
//
// On a single node this broker writes. In a cluster only the leader of
// _schemas-0 writes; the other brokers answer reads from their replica
// and refuse writes (50001 naming the leader) for now.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator"
	"github.com/gregor-broker/gregor/schemaregistry"
	"github.com/gregor-broker/gregor/storage"
)

// schemasTopicName is the registry's topic, Confluent's default.
const schemasTopicName = "_schemas"

// schemaRegistry is the registry's listener and state; nil without one.
type schemaRegistry struct {
	ln  net.Listener
	srv *http.Server
	log *schemasLog
}

// listenSchemaRegistry binds schema.registry.listeners; nil when unset.
func (b *Broker) listenSchemaRegistry() (*schemaRegistry, error) {
	v := strings.TrimSpace(b.cfg.Props["schema.registry.listeners"])
	if v == "" {
		return nil, nil
	}
	if strings.Contains(v, ",") {
		return nil, fmt.Errorf("schema.registry.listeners %q: one listener only", v)
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("schema.registry.listeners %q: want http://HOST:PORT", v)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("schema.registry.listeners: %w", err)
	}
	sl := &schemasLog{b: b}
	reg, err := schemaregistry.New(schemaregistry.Config{Log: sl, Logger: b.log.With("component", "schema-registry")})
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &schemaRegistry{ln: ln, log: sl, srv: &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 10 * time.Second}}, nil
}

// SchemaRegistryAddr is the schema registry's bound address; nil without
// one.
func (b *Broker) SchemaRegistryAddr() net.Addr {
	if b.registry == nil {
		return nil
	}
	return b.registry.ln.Addr()
}

func (r *schemaRegistry) serve() {
	if err := r.srv.Serve(r.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		r.log.b.log.Error("schema registry listener", "err", err)
	}
}

func (r *schemaRegistry) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.srv.Shutdown(ctx)
}

// schemasLog is _schemas-0 as schemaregistry.Log.
type schemasLog struct {
	b  *Broker
	mu sync.Mutex // one conditional append at a time on this broker
}

// errSchemasConflict stops an append whose expected end is stale.
var errSchemasConflict = schemaregistry.ErrConflict

// partition returns _schemas-0, creating the topic when needed.
func (l *schemasLog) partition() (*partition, error) {
	b := l.b
	t := b.lookupTopic(schemasTopicName)
	if t == nil {
		rf := int16(1)
		if b.cl != nil {
			brokers, _ := b.brokersView()
			rf = int16(min(3, len(brokers)))
		}
		var err error
		if t, err = b.createTopicAssigned(schemasTopicName, 1, rf, nil, internalTopicConfigs()); err != nil {
			if t = b.lookupTopic(schemasTopicName); t == nil {
				return nil, fmt.Errorf("creating %s: %w", schemasTopicName, err)
			}
		}
	}
	p := partitionAt(b.partitionsOf(t), 0)
	if p == nil || p.log == nil {
		return nil, fmt.Errorf("%s-0 has no replica on this broker", schemasTopicName)
	}
	return p, nil
}

// Append implements schemaregistry.Log.
func (l *schemasLog) Append(ctx context.Context, expectedEnd int64, key, value []byte) (int64, error) {
	if _, err := l.partition(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := groupLog{b: l.b, topic: schemasTopicName}
	target, wait, err := g.appendBatch(0, func(p *partition) (int64, error) {
		if end := p.log.LogEndOffset(); end != expectedEnd {
			return 0, errSchemasConflict
		}
		batch := buildBatch([]coordinator.LogRecord{{Key: key, Value: value}}, l.b.cfg.Now().UnixMilli())
		res, err := p.log.Append(batch, storage.AppendOptions{LeaderEpoch: p.epoch.Load(), LogAppendTime: -1})
		return res.LastOffset, err
	})
	if err != nil {
		return 0, err
	}
	if err := wait(); err != nil {
		return 0, err
	}
	return target - 1, nil
}

// Read implements schemaregistry.Log: the records from from, up to about
// 1 MiB of them, below the high watermark.
func (l *schemasLog) Read(ctx context.Context, from int64) ([]schemaregistry.Record, int64, error) {
	p, err := l.partition()
	if err != nil {
		return nil, 0, err
	}
	end := p.log.HighWatermark()
	from = max(from, p.log.LogStartOffset())
	if from >= end {
		return nil, end, nil
	}
	var recs []schemaregistry.Record
	for off := from; off < end && len(recs) == 0; {
		rr, err := p.log.Read(off, 1<<20, true)
		if err != nil {
			return nil, 0, err
		}
		buf, err := rr.Slice.ReadAll()
		rr.Slice.Release()
		if err != nil {
			return nil, 0, err
		}
		next, err := replayBatches(buf, off, func(o int64, r coordinator.LogRecord) error {
			if o < end && !r.Control {
				recs = append(recs, schemaregistry.Record{Offset: o, Key: r.Key, Value: r.Value})
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		if next <= off {
			break // nothing whole to read: the registry sees the end
		}
		off = next
	}
	return recs, end, nil // none: only markers or compacted gaps up to end
}
