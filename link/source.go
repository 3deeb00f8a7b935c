package link

import (
	"context"
	"time"

	"github.com/gregor-broker/gregor/clientconfig"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sourceOptions are the client options for a link's source cluster: its
// Kafka client properties as package clientconfig reads them
// (security.protocol, sasl.*, ssl.* with PEM, PKCS12 or JKS stores).
func sourceOptions(l *Link) ([]kgo.Opt, error) {
	sec, err := clientconfig.Options(l.SourceConfig)
	if err != nil {
		return nil, err
	}
	return append([]kgo.Opt{
		kgo.SeedBrokers(l.Source...),
		kgo.ClientID("gregor-link-" + l.Name),
		kgo.DialTimeout(10 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(time.Second),
	}, sec...), nil
}

// askAny sends a request that any source broker answers (Metadata,
// DescribeConfigs, DescribeACLs): first to the source broker that
// answered a fetch last, for metadataTimeout, then to any broker, for
// sourceRequestTimeout. The client's "any broker" goes round every
// broker, a stopped one too, whose request would hang until the client's
// retry timeout; the broker that answered last most likely answers.
func (r *runner) askAny(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if b := r.answered.Load(); b >= 0 {
		actx, cancel := context.WithTimeout(ctx, min(metadataTimeout, r.sourceTimeout))
		resp, err := r.cl.Broker(int(b)).Request(actx, req)
		cancel()
		if err == nil {
			return resp, nil
		}
	}
	actx, cancel := context.WithTimeout(ctx, r.sourceTimeout)
	defer cancel()
	return r.cl.Request(actx, req)
}
