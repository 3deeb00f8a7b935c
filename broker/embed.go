package broker

// The Go API for programs that embed a broker (package gregortest, the admin
// HTTP listener): creating topics without a client, and readiness.

import (
	"errors"
	"fmt"
	"maps"

	"github.com/gregor-broker/gregor/config"
)

// ErrTopicExists is returned by CreateTopic when the topic already exists.
var ErrTopicExists = errTopicExists

// CreateTopic creates a topic with the given number of partitions (<= 0: the
// broker's num.partitions) and topic config overrides, named as in Kafka
// (retention.ms, cleanup.policy, …). It validates like CreateTopics does.
//
// It returns ErrTopicExists when the topic exists, and an error describing
// the problem for an invalid name or config.
func (b *Broker) CreateTopic(name string, partitions int32, configs map[string]string) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	if partitions <= 0 {
		partitions = int32(b.cfg.int64Prop("num.partitions"))
	}
	for k, v := range configs {
		if err := config.ValidateTopic(k, v); err != nil {
			return fmt.Errorf("topic %s: %w", name, err)
		}
	}
	_, err := b.createTopic(name, partitions, maps.Clone(configs))
	if errors.Is(err, errTopicExists) {
		return ErrTopicExists
	}
	return err
}

// Ready reports whether the broker is listening and not closed: what
// /readyz answers.
func (b *Broker) Ready() bool {
	if b.ctx.Err() != nil || b.LogDirError() != nil {
		return false
	}
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	return len(b.srv.listeners) > 0 && !b.srv.closed
}

// DataDir returns the data directory the broker uses (Config.DataDir, else
// log.dirs or log.dir of its properties, else ./data).
func (b *Broker) DataDir() string { return b.cfg.DataDir }

// Addr returns the bound address of the first listener, or "" before
// Listen (ListenerAddr gives any listener's).
func (b *Broker) Addr() string {
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	if len(b.srv.listeners) == 0 {
		return ""
	}
	return b.srv.listeners[0].ln.Addr().String()
}
