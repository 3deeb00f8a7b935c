package broker

// __transaction_state: the transaction coordinator's replicated log.
//
// Created on first use (a FindCoordinator for a transactional id, an
// InitProducerId, any transactional request), on a single node too, with
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas and
// transaction.state.log.min.isr, both capped at the live brokers; internal
// and compacted, with retention -1 like __consumer_offsets.
//
// Transactional id T is coordinated by the leader of partition
// coordinator.PartitionFor(T, partitions). When this broker becomes leader
// of a partition the transaction coordinator loads it (completing the
// transactions it finds in Prepare*), and unloads it when it stops leading
// (coordinator/txnlog.go). Every transition is appended there and waits
// for the high watermark with min.isr, as an acks=all produce does.

import (
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const txnStateTopicName = "__transaction_state"

// txnLogMinISR is transaction.state.log.min.isr capped at the topic's
// replication factor.
func (b *Broker) txnLogMinISR(t *topic) int {
	minISR := int(b.cfg.int64Prop("transaction.state.log.min.isr"))
	if parts := b.partitionsOf(t); len(parts) > 0 {
		if mp := parts[0].meta.Load(); mp != nil && len(mp.Replicas) < minISR {
			minISR = len(mp.Replicas)
		}
	}
	return max(minISR, 1)
}

// txnStateTopic returns __transaction_state, creating it if needed; nil if
// it cannot be created now.
func (b *Broker) txnStateTopic() *topic {
	st := &b.txnLog
	if t := b.lookupTopic(txnStateTopicName); t != nil && (b.cl != nil || st.ready.Load()) {
		return t
	}
	st.createMu.Lock()
	defer st.createMu.Unlock()
	if t := b.lookupTopic(txnStateTopicName); t != nil {
		if b.cl == nil && !st.ready.Load() {
			b.syncTxnPartitions()
			st.ready.Store(true)
		}
		return t
	}
	n := int32(b.cfg.int64Prop("transaction.state.log.num.partitions"))
	rf := int16(1)
	if b.cl != nil {
		rf = int16(b.cfg.int64Prop("transaction.state.log.replication.factor"))
		if brokers, _ := b.brokersView(); len(brokers) < int(rf) {
			rf = int16(len(brokers))
		}
		if rf < 1 {
			return nil
		}
	}
	configs := internalTopicConfigs()
	configs["min.insync.replicas"] = strconv.Itoa(min(int(b.cfg.int64Prop("transaction.state.log.min.isr")), int(rf)))
	t, err := b.createTopicAssigned(txnStateTopicName, n, rf, nil, configs)
	if err != nil {
		if t = b.lookupTopic(txnStateTopicName); t == nil {
			b.log.Warn("creating "+txnStateTopicName, "err", err)
			return nil
		}
	}
	if b.cl == nil {
		b.syncTxnPartitions()
		st.ready.Store(true)
	}
	return t
}

// syncTxnPartitions loads the partitions of __transaction_state this broker
// has become leader of and unloads those it no longer leads. It runs after
// every applied metadata change and when the topic is created on a single
// node. In a cluster both run in the background, one at a time per
// partition: a load waits for the previous leader's records to commit.
func (b *Broker) syncTxnPartitions() {
	t := b.lookupTopic(txnStateTopicName)
	if t == nil || b.txns == nil {
		return
	}
	st := &b.txnLog
	type change struct {
		pi, epoch int32
		load      bool
	}
	var changes []change
	st.mu.Lock()
	if st.loaded == nil {
		st.loaded = map[int32]int32{}
		st.loadMu = map[int32]*sync.Mutex{}
	}
	for _, p := range b.partitionsOf(t) {
		if st.loadMu[p.index] == nil {
			st.loadMu[p.index] = &sync.Mutex{}
		}
		leads, epoch := b.leadsGroupPartition(p)
		cur, ok := st.loaded[p.index]
		switch {
		case leads && (!ok || cur != epoch):
			if ok {
				changes = append(changes, change{p.index, cur, false})
			}
			st.loaded[p.index] = epoch
			changes = append(changes, change{p.index, epoch, true})
		case !leads && ok:
			delete(st.loaded, p.index)
			changes = append(changes, change{p.index, cur, false})
		}
	}
	st.mu.Unlock()
	for _, c := range changes {
		if b.cl == nil {
			b.applyTxnPartition(c.pi, c.epoch, c.load)
		} else {
			go b.applyTxnPartition(c.pi, c.epoch, c.load)
		}
	}
}

// applyTxnPartition unloads partition pi, or loads it while this broker
// leads it in epoch, retrying failed loads.
func (b *Broker) applyTxnPartition(pi, epoch int32, load bool) {
	st := &b.txnLog
	st.mu.Lock()
	mu := st.loadMu[pi]
	st.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if !load {
		b.txns.UnloadPartition(pi)
		b.log.Info("unloaded transaction coordinator partition", "partition", pi)
		return
	}
	for attempt := 0; ; attempt++ {
		st.mu.Lock()
		cur, ok := st.loaded[pi]
		st.mu.Unlock()
		if !ok || cur != epoch || b.ctx.Err() != nil {
			return
		}
		start := time.Now()
		err := b.txns.LoadPartition(pi)
		if err == nil {
			b.log.Info("loaded transaction coordinator partition", "partition", pi, "leader_epoch", epoch, "took", time.Since(start))
			return
		}
		b.log.Warn("loading transaction coordinator partition", "partition", pi, "err", err, "attempt", attempt)
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// txnCoordinator returns the broker coordinating transactional id: the
// leader of its partition of __transaction_state.
func (b *Broker) txnCoordinator(id string) (brokerInfo, int16) {
	return b.keyCoordinator(b.txnStateTopic(), id)
}

// txnCoordinatorCode is what a request for transactional id gets here: 0
// if this broker serves it, else NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE.
func (b *Broker) txnCoordinatorCode(id string) int16 {
	return b.keyCoordinatorCode(b.txnStateTopic(), id, b.txns.TxnError)
}

// requestTxnIDs returns the transactional ids of a transaction request;
// false for the other requests.
func requestTxnIDs(msg kmsg.Request) ([]string, bool) {
	switch m := msg.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		if m.Version >= 4 {
			ids := make([]string, 0, len(m.Transactions))
			for _, tx := range m.Transactions {
				ids = append(ids, tx.TransactionalID)
			}
			return ids, true
		}
		return []string{m.TransactionalID}, true
	case *kmsg.AddOffsetsToTxnRequest:
		return []string{m.TransactionalID}, true
	case *kmsg.EndTxnRequest:
		return []string{m.TransactionalID}, true
	case *kmsg.DescribeTransactionsRequest:
		return m.TransactionalIDs, true
	}
	return nil, false
}
