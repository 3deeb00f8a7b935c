package link

import (
	"time"

	"github.com/gregor-broker/gregor/clientconfig"
	"github.com/twmb/franz-go/pkg/kgo"
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
