package broker

// Client metrics (KIP-714, package clientmetrics): the subscriptions'
// store and the connection's side of GetTelemetrySubscriptions and
// PushTelemetry (71_get_telemetry_subscriptions.go, 72_push_telemetry.go);
// CLIENT_METRICS resources in DescribeConfigs and IncrementalAlterConfigs,
// and ListConfigResources (74_list_config_resources.go).
//
// The subscriptions are a metastore collection: on a single node
// <data-dir>/__meta/client-metrics.json, replaced whole, beside
// quotas.json; in a cluster etcd's keys under /gregor/client-metrics/<name>
// (Cluster.Collection). The metrics clients push are exported on the
// broker's registry (Metrics), which the admin listener serves on
// /metrics: Gregor's addition, since Kafka only hands them to a plugin.

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/clientmetrics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientMetricsFileName is the single-node subscription store under __meta.
const clientMetricsFileName = "client-metrics.json"

// clientMetricsTimeout bounds a subscription change in the store.
const clientMetricsTimeout = 10 * time.Second

// clientMetricsRecord is a subscription as the store keeps it (package
// clientmetrics' record).
type clientMetricsRecord struct {
	Name    string            `json:"name"`
	Configs map[string]string `json:"configs"`
}

func (b *Broker) initClientMetrics() error {
	b.cm = clientmetrics.New(clientmetrics.Config{
		Decompress: decompress,
		Now:        b.cfg.Now,
		Log:        b.log.With("component", "client-metrics"),
	})
	if b.cfg.clusterConfigured() {
		return nil // the cluster's collection, once joined (startCluster)
	}
	f, err := openListFile(filepath.Join(b.cfg.DataDir, metaDirName, clientMetricsFileName), "subscriptions", func(r *clientMetricsRecord) string { return r.Name })
	if err != nil {
		return err
	}
	b.cm.Use(f)
	return nil
}

// telemetryClient is what the connection knows of its client.
func telemetryClient(r *request) clientmetrics.Client {
	var c clientmetrics.Client
	if r.hdr.ClientID != nil {
		c.ClientID = *r.hdr.ClientID
	}
	if r.conn == nil {
		return c
	}
	c.SoftwareName, c.SoftwareVersion = r.conn.softwareName, r.conn.softwareVersion
	if host, port, err := net.SplitHostPort(r.conn.nc.RemoteAddr().String()); err == nil {
		c.SourceAddress = host
		c.SourcePort, _ = strconv.Atoi(port)
	}
	return c
}

// describeClientMetricsConfigs lists a subscription's configs as Kafka
// does: those set with source CLIENT_METRICS_CONFIG and a synonym, the
// others DEFAULT_CONFIG; IsDefault is false for all, as in Kafka. Any
// name is described (a subscription that does not exist has defaults).
func (b *Broker) describeClientMetricsConfigs(req *kmsg.DescribeConfigsRequest, name string, want func(string) bool) []kmsg.DescribeConfigsResponseResourceConfig {
	set := b.cm.Configs(name)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range clientmetrics.ConfigDefs {
		if !want(d.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Source = d.Name, kmsg.ConfigSourceDefaultConfig
		v, ok := set[d.Name]
		if ok {
			c.Source = kmsg.ConfigSourceClientMetricsConfig
			if req.IncludeSynonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = d.Name, kmsg.StringPtr(v), c.Source
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
		} else {
			v = d.Default
		}
		c.Value = kmsg.StringPtr(v)
		c.ConfigType = kmsg.ConfigTypeInt
		if d.List {
			c.ConfigType = kmsg.ConfigTypeList
		}
		if req.IncludeDocumentation {
			c.Documentation = kmsg.StringPtr(d.Doc)
		}
		out = append(out, c)
	}
	return out
}

// alterClientMetrics applies IncrementalAlterConfigs to a CLIENT_METRICS
// resource, with Kafka's errors (measured against Kafka 4.4: an empty
// name, an unknown config or an interval out of range INVALID_REQUEST;
// a bad pattern or number, or APPEND/SUBTRACT, which Kafka refuses for
// these configs, INVALID_CONFIG).
func (b *Broker) alterClientMetrics(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	ctx, cancel := context.WithTimeout(b.ctx, clientMetricsTimeout)
	defer cancel()
	err := b.cm.Alter(ctx, rr.ResourceName, validateOnly, func(cur map[string]string) (map[string]string, error) {
		names := map[string]bool{}
		for _, c := range rr.Configs {
			if names[c.Name] {
				return nil, errDuplicateConfigKeys
			}
			names[c.Name] = true
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if c.Value == nil {
					return nil, errNullValue(c.Name)
				}
				cur[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, c.Name)
			case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
				return nil, cmConfigError{kerr.InvalidConfig, "Can't " + strings.ToUpper(c.Op.String()) + " to key " + c.Name + " because its type is not LIST."}
			default:
				return nil, cmConfigError{kerr.InvalidRequest, "Unknown operation " + c.Op.String()}
			}
		}
		return cur, nil
	})
	var ce cmConfigError
	switch {
	case err == nil:
		return nil, ""
	case errors.As(err, &ce):
		return ce.e, ce.msg
	case errors.Is(err, clientmetrics.ErrInvalidRequest):
		return kerr.InvalidRequest, err.Error()
	case errors.Is(err, clientmetrics.ErrInvalidConfig):
		return kerr.InvalidConfig, err.Error()
	}
	b.log.Warn("client metrics subscription", "name", rr.ResourceName, "err", err)
	return kerr.UnknownServerError, err.Error()
}

// cmConfigError is a Kafka error with its message from an update.
type cmConfigError struct {
	e   *kerr.Error
	msg string
}

func (e cmConfigError) Error() string { return e.msg }

var errDuplicateConfigKeys = cmConfigError{kerr.InvalidRequest, "Error due to duplicate config keys"}

func errNullValue(name string) error {
	return cmConfigError{kerr.InvalidRequest, "Null value not supported for SET of " + name}
}
