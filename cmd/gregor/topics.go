package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

const topicsUsage = `usage: gregor topics COMMAND [flags]

  list                          topics with their partition counts
  create TOPIC… [--partitions N] [--replication-factor N] [--config k=v…]
  describe TOPIC…               partitions with leaders and offsets, config overrides
  delete TOPIC…
  alter-config TOPIC… [--set k=v…] [--delete k…]

Every command takes --brokers HOST:PORT[,…], --timeout and --command-config
FILE (Kafka client properties: security.protocol, sasl.*, ssl.*); list and
describe take --format json.`

func topicsCmd(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(os.Stdout, topicsUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, topicsUsage)
		return errUsage
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "list":
		return topicsList(args)
	case "create":
		return topicsCreate(args)
	case "describe":
		return topicsDescribe(args)
	case "delete":
		return topicsDelete(args)
	case "alter-config":
		return topicsAlterConfig(args)
	}
	fmt.Fprintln(os.Stderr, topicsUsage)
	return fmt.Errorf("topics: unknown command %q", sub)
}

// topicsList lists topics with their partition counts and replication factors.
func topicsList(args []string) error {
	var cf clientFlags
	fs := newFlagSet("topics list", "[--internal]", "Lists topics.")
	cf.register(fs)
	internal := fs.Bool("internal", false, "include internal topics")
	format := formatFlag(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()
	var td kadm.TopicDetails
	if *internal {
		td, err = adm.ListTopicsWithInternal(ctx)
	} else {
		td, err = adm.ListTopics(ctx)
	}
	if err != nil {
		return err
	}
	if *format == "json" {
		type topicJSON struct {
			Topic       string `json:"topic"`
			ID          string `json:"id"`
			Partitions  int    `json:"partitions"`
			Replication int    `json:"replication_factor"`
			Internal    bool   `json:"internal"`
			Error       string `json:"error,omitempty"`
		}
		out := []topicJSON{}
		for _, t := range td.Sorted() {
			j := topicJSON{Topic: t.Topic, ID: kafkaUUID(t.ID), Internal: t.IsInternal}
			if t.Err != nil {
				j.Error = t.Err.Error()
			} else {
				j.Partitions, j.Replication = len(t.Partitions), t.Partitions.NumReplicas()
			}
			out = append(out, j)
		}
		return printJSON(out)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITIONS\tREPLICATION")
	for _, t := range td.Sorted() {
		if t.Err != nil {
			fmt.Fprintf(w, "%s\t-\t-\t%v\n", t.Topic, t.Err)
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%d\n", t.Topic, len(t.Partitions), t.Partitions.NumReplicas())
	}
	return w.Flush()
}

// topicsCreate creates topics.
func topicsCreate(args []string) error {
	var cf clientFlags
	fs := newFlagSet("topics create", "TOPIC… [flags]", "Creates topics.")
	cf.register(fs)
	partitions := fs.Int("partitions", -1, "partitions (-1: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replication factor (-1: the broker's default)")
	var configs multiFlag
	fs.Var(&configs, "config", "topic config key=value (repeatable)")
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("topics create: name at least one topic")
	}
	cfg := map[string]*string{}
	for _, kv := range configs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--config %q: want key=value", kv)
		}
		cfg[k] = &v
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.CreateTopics(ctx, int32(*partitions), int16(*rf), cfg, names...)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w%s", r.Topic, r.Err, detail(r.Err, r.ErrMessage)))
			continue
		}
		fmt.Printf("created topic %s with %s\n", r.Topic, plural(int(r.NumPartitions), "partition"))
	}
	return errors.Join(errs...)
}

// topicsDescribe prints each topic's partitions (leader, replicas, ISR, offsets) and config overrides.
func topicsDescribe(args []string) error {
	var cf clientFlags
	fs := newFlagSet("topics describe", "TOPIC…", "Describes topics: partitions, offsets, config overrides.")
	cf.register(fs)
	format := formatFlag(fs)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return err
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return err
	}
	type partitionJSON struct {
		Partition      int32   `json:"partition"`
		Leader         int32   `json:"leader"`
		LeaderEpoch    int32   `json:"leader_epoch"`
		Replicas       []int32 `json:"replicas"`
		ISR            []int32 `json:"isr"`
		OfflineReplica []int32 `json:"offline_replicas"`
		LogStartOffset int64   `json:"log_start_offset"`
		LogEndOffset   int64   `json:"log_end_offset"`
	}
	type topicJSON struct {
		Topic       string            `json:"topic"`
		ID          string            `json:"id"`
		Replication int               `json:"replication_factor"`
		Configs     map[string]string `json:"configs"`
		Partitions  []partitionJSON   `json:"partitions"`
	}
	var errs []error
	jsonOut := []topicJSON{}
	for _, t := range td.Sorted() {
		if t.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.Topic, t.Err))
			continue
		}
		if *format == "json" {
			j := topicJSON{Topic: t.Topic, ID: kafkaUUID(t.ID), Replication: t.Partitions.NumReplicas(), Configs: map[string]string{}, Partitions: []partitionJSON{}}
			if rc, err := rcs.On(t.Topic, nil); err == nil {
				for _, c := range rc.Configs {
					if c.Source == 1 { // DYNAMIC_TOPIC_CONFIG
						j.Configs[c.Key] = c.MaybeValue()
					}
				}
			}
			for _, p := range t.Partitions.Sorted() {
				st, _ := starts.Lookup(t.Topic, p.Partition)
				e, _ := ends.Lookup(t.Topic, p.Partition)
				j.Partitions = append(j.Partitions, partitionJSON{p.Partition, p.Leader, p.LeaderEpoch, nonNil(p.Replicas), nonNil(p.ISR), nonNil(p.OfflineReplicas), st.Offset, e.Offset})
			}
			jsonOut = append(jsonOut, j)
			continue
		}
		fmt.Printf("Topic: %s\tID: %s\tPartitions: %d\tReplication: %d\n", t.Topic, kafkaUUID(t.ID), len(t.Partitions), t.Partitions.NumReplicas())
		if rc, err := rcs.On(t.Topic, nil); err == nil {
			var over []string
			for _, c := range rc.Configs {
				if c.Source == 1 { // DYNAMIC_TOPIC_CONFIG
					over = append(over, c.Key+"="+c.MaybeValue())
				}
			}
			slices.Sort(over)
			if len(over) > 0 {
				fmt.Printf("Configs: %s\n", strings.Join(over, ","))
			}
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PARTITION\tLEADER\tREPLICAS\tISR\tLOG-START-OFFSET\tLOG-END-OFFSET\tRECORDS")
		for _, p := range t.Partitions.Sorted() {
			s, _ := starts.Lookup(t.Topic, p.Partition)
			e, _ := ends.Lookup(t.Topic, p.Partition)
			fmt.Fprintf(w, "%d\t%d\t%v\t%v\t%d\t%d\t%d\n", p.Partition, p.Leader, p.Replicas, p.ISR, s.Offset, e.Offset, e.Offset-s.Offset)
		}
		w.Flush()
	}
	if *format == "json" {
		if err := printJSON(jsonOut); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// nonNil is s, or an empty slice for nil (JSON [] rather than null).
func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// topicsDelete deletes topics.
func topicsDelete(args []string) error {
	var cf clientFlags
	fs := newFlagSet("topics delete", "TOPIC…", "Deletes topics.")
	cf.register(fs)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("topics delete: name at least one topic")
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w%s", r.Topic, r.Err, detail(r.Err, r.ErrMessage)))
			continue
		}
		fmt.Printf("deleted topic %s\n", r.Topic)
	}
	return errors.Join(errs...)
}

// topicsAlterConfig sets and removes topic config overrides.
func topicsAlterConfig(args []string) error {
	var cf clientFlags
	fs := newFlagSet("topics alter-config", "TOPIC… [--set k=v…] [--delete k…]", "Sets or removes topic config overrides.")
	cf.register(fs)
	var sets, dels multiFlag
	fs.Var(&sets, "set", "key=value to set (repeatable)")
	fs.Var(&dels, "delete", "key to reset to its default (repeatable)")
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 || len(sets)+len(dels) == 0 {
		return errors.New("topics alter-config: name topics and at least one --set or --delete")
	}
	var alters []kadm.AlterConfig
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--set %q: want key=value", kv)
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range dels {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	adm, ctx, done, err := cf.adminContext()
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.AlterTopicConfigs(ctx, alters, names...)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range resps {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w%s", r.Name, r.Err, detail(r.Err, r.ErrMessage)))
			continue
		}
		fmt.Printf("altered configs of topic %s\n", r.Name)
	}
	return errors.Join(errs...)
}

// detail is the broker's message for err, when it says more than err.
func detail(err error, msg string) string {
	if msg == "" || err != nil && strings.Contains(err.Error(), msg) {
		return ""
	}
	return ": " + msg
}

// plural is n with noun, made plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// kafkaUUID is a topic id as Kafka's tools print it (Uuid.toString: URL-safe
// base64 without padding), not kadm's padded standard base64.
func kafkaUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
