package broker

// Broker-side schema ID validation, as Confluent Server has it: with
// confluent.value.schema.validation=true on a topic (and
// confluent.key.schema.validation for keys), a produced record whose value
// is not in Confluent's wire format (magic byte 0, then a 4-byte schema
// id) or whose schema id is not registered, under the subject its
// strategy names (confluent.value.subject.name.strategy:
// TopicNameStrategy <topic>-value, TopicRecordNameStrategy <topic>-…,
// RecordNameStrategy any subject), in this broker's schema registry
// (schema.registry.listeners) is refused: the batch gets INVALID_RECORD
// with a record error per offending record. Null keys and values (a
// tombstone) pass. The schema itself is not decoded: only the id is
// checked, as Confluent does.
//
// The ids are looked up in this broker's registry (its view of
// _schemas-0, read up to the log end) and their subjects cached for a
// minute (schemaCacheTTL) with the high watermark of _schemas-0 they were
// read at; a record that fails against cached subjects is checked again
// only when _schemas has grown since, so a schema just registered is
// accepted at once while a producer sending bad ids costs no read. A
// broker that does not lead _schemas-0 reads the registry's records from
// its leader (schemasLog.Read) and cannot see the log grow: it reads an
// id that failed again at most once a second (schemaRereadNoReplica).

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/config"
	"github.com/gregor-broker/gregor/storage"
)

// schemaCheck is what a topic validates: keys, values, and the subject
// strategy of each.
type schemaCheck struct {
	b                        *Broker
	keys, values             bool
	keyStrategy, valStrategy string
}

// schemaCheckFor returns the validation a topic's configs ask for; nil
// when none.
func (b *Broker) schemaCheckFor(overrides map[string]string) *schemaCheck {
	keys := b.topicValue(overrides, "confluent.key.schema.validation") == "true"
	values := b.topicValue(overrides, "confluent.value.schema.validation") == "true"
	if !keys && !values {
		return nil
	}
	return &schemaCheck{b: b, keys: keys, values: values,
		keyStrategy: b.topicValue(overrides, "confluent.key.subject.name.strategy"),
		valStrategy: b.topicValue(overrides, "confluent.value.subject.name.strategy")}
}

// check returns why a record fails validation, "" when it passes.
func (c *schemaCheck) check(topic string, r storage.RecordCheck) string {
	if c.keys && r.Key != nil {
		if why := c.b.schemaIDs.check(c.b, topic, "key", c.keyStrategy, r.Key); why != "" {
			return why
		}
	}
	if c.values && r.Value != nil {
		return c.b.schemaIDs.check(c.b, topic, "value", c.valStrategy, r.Value)
	}
	return ""
}

// schemaIDCache caches the subjects of schema ids (every broker has one).
type schemaIDCache struct {
	mu      sync.Mutex
	entries map[int]schemaIDEntry
}

type schemaIDEntry struct {
	subjects []string
	at       time.Time
	hw       int64 // _schemas-0's high watermark when read
}

// usable says whether the entry answers a lookup (refresh: one whose
// cached subjects did not match) made when _schemas-0's high watermark
// here is hw (-1: no replica here), and whether nothing newer could be read.
func (e schemaIDEntry) usable(refresh bool, hw int64, now time.Time) (cached, fresh bool) {
	age := now.Sub(e.at)
	switch {
	case age >= schemaCacheTTL:
		return false, false
	case hw >= 0 && hw <= e.hw:
		return true, true // _schemas has not grown since
	case !refresh:
		return true, false
	case hw < 0 && age < schemaRereadNoReplica:
		return true, true // read a moment ago: no read per bad batch
	}
	return false, false
}

const (
	schemaCacheTTL        = time.Minute
	maxSchemaCacheEntries = 10000
	// schemaRereadNoReplica bounds how often a broker with no replica of
	// _schemas-0 (it cannot see the log grow) reads an id again for a
	// record that failed: a schema registered since is accepted within
	// it, and a producer sending a bad id costs one read a second.
	schemaRereadNoReplica = time.Second
)

// check returns why data (a key or value, per part) fails validation.
func (s *schemaIDCache) check(b *Broker, topic, part, strategy string, data []byte) string {
	if len(data) < 5 || data[0] != 0 {
		return fmt.Sprintf("Log record %s of topic %s is not in the schema registry's wire format (magic byte 0 and a schema id): schema validation is on for it", part, topic)
	}
	id := int(int32(binary.BigEndian.Uint32(data[1:5])))
	subjects, fresh, err := s.subjects(b, id, false)
	if err == nil && !fresh && !matches(topic, part, strategy, subjects) {
		subjects, _, err = s.subjects(b, id, true)
	}
	if err != nil {
		return fmt.Sprintf("Log record %s of topic %s could not be validated: %v", part, topic, err)
	}
	if !matches(topic, part, strategy, subjects) {
		return fmt.Sprintf("Log record %s of topic %s has schema id %d, which is not registered under a subject of %s for it", part, topic, id, strategy[strings.LastIndexByte(strategy, '.')+1:])
	}
	return ""
}

// matches reports whether one of subjects is one strategy names for a
// topic's key or value (part).
func matches(topic, part, strategy string, subjects []string) bool {
	ok := false
	switch strategy {
	case config.RecordNameStrategy:
		ok = len(subjects) > 0
	case config.TopicRecordNameStrategy:
		for _, sub := range subjects {
			ok = ok || strings.HasPrefix(sub, topic+"-")
		}
	default: // TopicNameStrategy
		for _, sub := range subjects {
			ok = ok || sub == topic+"-"+part
		}
	}
	return ok
}

// subjects returns the subjects of schema id, cached unless refresh asks
// for them again and _schemas has grown since; fresh says nothing newer
// could be read.
func (s *schemaIDCache) subjects(b *Broker, id int, refresh bool) (subjects []string, fresh bool, err error) {
	r := b.registry
	if r == nil {
		return nil, false, fmt.Errorf("this broker serves no schema registry (schema.registry.listeners)")
	}
	// The high watermark of _schemas-0 here, when this broker's replica
	// is the one its view reads; -1 (unknown: a refresh reads, at most
	// once a second) when another broker leads it, since this broker's
	// replica, if any, lags the leader its view is read from.
	hw := int64(-1)
	if _, remote := r.log.remoteLeader(); !remote {
		if t := b.lookupTopic(schemasTopicName); t != nil {
			if p := partitionAt(b.partitionsOf(t), 0); p != nil && p.log != nil {
				hw = p.log.HighWatermark()
			}
		}
	}
	now := time.Now()
	s.mu.Lock()
	e, ok := s.entries[id]
	s.mu.Unlock()
	if ok {
		if cached, fresh := e.usable(refresh, hw, now); cached {
			return e.subjects, fresh, nil
		}
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if subjects, err = r.reg.SubjectsOf(ctx, id); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	if s.entries == nil || len(s.entries) >= maxSchemaCacheEntries {
		s.entries = map[int]schemaIDEntry{}
	}
	s.entries[id] = schemaIDEntry{subjects: subjects, at: now, hw: hw}
	s.mu.Unlock()
	return subjects, true, nil
}
