package broker

// Gauges of the cluster's health and this broker's disk, for alerting
// (docker/prometheus-alerts.yml):
//
//	gregor_under_replicated_partitions  partitions this broker leads whose ISR is smaller than their replicas
//	                                    (as Kafka's UnderReplicatedPartitions: summed over brokers, each counted once)
//	gregor_offline_partitions           partitions without a live leader, as this broker's metadata has them
//	gregor_reassigning_partitions       partitions with a reassignment in progress, as this broker sees them
//	gregor_cluster_brokers              live brokers, as this broker sees them
//	gregor_log_dir_size_bytes           bytes of this broker's partitions' segment files
//	gregor_log_dir_total_bytes          size of the file system holding the data directory
//	gregor_log_dir_usable_bytes         bytes an unprivileged user may still write there
//	gregor_log_dir_open_segment_files   segments whose .log file is open now (log.dir.max.open.files bounds it)
//	gregor_log_dir_max_open_segment_files  that bound
//	gregor_log_dir_segment_file_opens_total  segment files opened (first opens and reopens after being closed to make room)
//	gregor_offline_log_dirs             1 while the data directory is offline after a failed write (logdir_failure.go)
//	gregor_cleaner_throttle_seconds_total  time the log cleaner's I/O throttle slept
//	gregor_fetch_sessions               incremental fetch sessions held (Kafka's NumIncrementalFetchSessions)
//	gregor_fetch_session_partitions     partitions they hold (NumIncrementalFetchPartitionsCached)
//	gregor_fetch_session_evictions_total  sessions evicted to make room for another (IncrementalFetchSessionEvictionsPerSec)
//
// The cluster-wide counts are the same on every broker that is up to date
// with the metadata: alert on their max() over brokers, not their sum().

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	descUnderRepl   = prometheus.NewDesc("gregor_under_replicated_partitions", "Partitions this broker leads whose ISR is smaller than their replica set.", nil, nil)
	descOffline     = prometheus.NewDesc("gregor_offline_partitions", "Partitions without a live leader, as this broker's metadata has them.", nil, nil)
	descReassigning = prometheus.NewDesc("gregor_reassigning_partitions", "Partitions with a reassignment in progress (adding or removing replicas).", nil, nil)
	descBrokers     = prometheus.NewDesc("gregor_cluster_brokers", "Live brokers, as this broker's metadata has them.", nil, nil)
	descDirSize     = prometheus.NewDesc("gregor_log_dir_size_bytes", "Bytes of this broker's partitions' segment files.", []string{"dir"}, nil)
	descDirTotal    = prometheus.NewDesc("gregor_log_dir_total_bytes", "Size of the file system holding the data directory.", []string{"dir"}, nil)
	descDirUsable   = prometheus.NewDesc("gregor_log_dir_usable_bytes", "Bytes an unprivileged user may still write on the data directory's file system.", []string{"dir"}, nil)
	descOpenFiles   = prometheus.NewDesc("gregor_log_dir_open_segment_files", "Segments whose .log file is open (and indexes mapped) now.", []string{"dir"}, nil)
	descMaxOpen     = prometheus.NewDesc("gregor_log_dir_max_open_segment_files", "The bound on open segment files (log.dir.max.open.files, or derived from the open-file and mapping limits).", []string{"dir"}, nil)
	descFileOpens   = prometheus.NewDesc("gregor_log_dir_segment_file_opens_total", "Segment files opened: first opens, and reopens of files closed to stay within the bound.", []string{"dir"}, nil)
	descSessions    = prometheus.NewDesc("gregor_fetch_sessions", "Incremental fetch sessions (KIP-227) this broker holds.", nil, nil)
	descSessParts   = prometheus.NewDesc("gregor_fetch_session_partitions", "Partitions of the incremental fetch sessions this broker holds.", nil, nil)
	descSessEvicted = prometheus.NewDesc("gregor_fetch_session_evictions_total", "Incremental fetch sessions evicted to make room for another.", nil, nil)
	descThrottle    = prometheus.NewDesc("gregor_cleaner_throttle_seconds_total", "Time the log cleaner's I/O throttle (log.cleaner.io.max.bytes.per.second) slept.", nil, nil)
)

// clusterGauges is the collector of the gauges above.
type clusterGauges struct{ b *Broker }

func (g clusterGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUnderRepl, descOffline, descReassigning, descBrokers, descDirSize, descDirTotal, descDirUsable, descOpenFiles, descMaxOpen, descFileOpens, descThrottle, descOfflineDirs, descSessions, descSessParts, descSessEvicted} {
		ch <- d
	}
}

func (g clusterGauges) Collect(ch chan<- prometheus.Metric) {
	b := g.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	ci := b.ClusterInfo()
	var under, offline, reassigning int
	for _, p := range ci.Partitions {
		switch {
		case p.OfflinePartition():
			offline++
		case p.Leader == b.nodeID && p.UnderReplicated():
			under++
		}
		if p.Reassigning() {
			reassigning++
		}
	}
	gauge(descUnderRepl, float64(under))
	gauge(descOffline, float64(offline))
	gauge(descReassigning, float64(reassigning))
	gauge(descBrokers, float64(len(ci.Brokers)))
	d := b.localLogDir()
	gauge(descDirSize, float64(d.SizeBytes), d.Dir)
	gauge(descDirTotal, float64(d.TotalBytes), d.Dir)
	gauge(descDirUsable, float64(d.UsableBytes), d.Dir)
	fs := b.dataDir.FileStats()
	gauge(descOpenFiles, float64(fs.Open), d.Dir)
	gauge(descMaxOpen, float64(fs.Limit), d.Dir)
	ch <- prometheus.MustNewConstMetric(descFileOpens, prometheus.CounterValue, float64(fs.Opens), d.Dir)
	offlineDirs := 0
	if b.LogDirError() != nil {
		offlineDirs = 1
	}
	gauge(descOfflineDirs, float64(offlineDirs))
	b.cleaner.mu.Lock()
	t := b.cleaner.throttle
	b.cleaner.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descThrottle, prometheus.CounterValue, t.throttled().Seconds())
	sessions, parts, evictions := b.fetchSessions.Stats()
	gauge(descSessions, float64(sessions))
	gauge(descSessParts, float64(parts))
	ch <- prometheus.MustNewConstMetric(descSessEvicted, prometheus.CounterValue, float64(evictions))
}
