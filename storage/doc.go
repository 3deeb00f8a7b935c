// Package storage is Gregor's partition log: Kafka's UnifiedLog, LogSegment,
// OffsetIndex, TimeIndex and ProducerStateManager, in Go. It imports only
// the standard library and golang.org/x/sys/unix, and knows nothing of
// requests.
//
// # Layout
//
// A Log is one partition, a directory <data-dir>/<topic>-<partition>/ of
// segments. Each segment is a .log file of record batches stored exactly as
// received (with baseOffset and partitionLeaderEpoch assigned), named by the
// 20-digit zero-padded offset of its first record, with a sparse offset index
// (.index) and a time index (.timeindex) beside it, and an aborted-transaction
// index (.txnindex) once an ABORT marker has been written to it.
// Producer-state snapshots (.snapshot, version 3: with each producer's open
// transaction and last marker's coordinator epoch), a checkpoint file (log start offset, recovery point and, for
// replicated logs, high watermark), the leader-epoch cache
// (leader-epoch-checkpoint) and a clean-shutdown marker complete the
// directory. The byte formats are described next to their constants:
// batch.go (record batch v2), index.go (.index, .timeindex), txn.go
// (.txnindex, control records), producer.go (.snapshot), checkpoint.go
// (checkpoint, clean-shutdown), epoch.go (leader-epoch-checkpoint) and
// segment.go (file names).
//
// # Appending
//
// Append validates a batch (ValidateBatch), applies the idempotent-producer
// rules, assigns offsets from the log end offset, rolls the active segment
// when segment.bytes or segment.ms say so (segment.ms as Kafka measures it:
// from the largest timestamp of the segment's first batch to that of the
// new batch, by the clock only for batches without timestamps), writes the batch with one write
// system call, updates the in-memory indexes of the active segment, and
// advances the high watermark, after an fsync when flush.messages asks for
// one. Rolling fsyncs the old segment and its indexes, maps its indexes
// read-only (they then live in the page cache, not the heap) and snapshots
// the producer state.
//
// # Reading
//
// Read finds the segment by binary search, the nearest preceding batch with
// the offset index, and scans batch headers to the batch holding the offset.
// It returns a Slice: an open file with a byte range, for sendfile (the
// file stays open until Release: see Open files). Reads do
// not take the append lock; they see the segment list and the high watermark's
// file position through atomics, so a slow fsync does not stall them. Slices
// hold a reference to their segment, so retention can unlink a segment while
// it is being sent. Notify gives long-polling fetches a channel closed when
// the high watermark advances; a fetch waiting on many partitions adds one
// Waiter to each of their logs instead (Wait, Unwait), woken by the same
// advances, so that a follower's Fetch of thousands of partitions waits
// without a goroutine per partition. ReadCommitted stops at the last
// stable offset instead (see Transactions).
//
// # Idempotent producers
//
// For each producer id the log keeps the epoch and the last five batches
// (sequence range, offsets, timestamp). A retry of one of those batches is
// answered with its original offsets and not written again; an older epoch
// is fenced (ErrInvalidProducerEpoch); a sequence gap is ErrOutOfOrderSequence.
// The state is snapshotted at every roll and at Close and rebuilt on Open from
// the newest snapshot plus the batch headers after it. Producers whose last
// batch falls below the log start offset are forgotten, unless they have a
// transaction open.
//
// # Transactions
//
// A transactional producer's first batch (transactional attribute) opens a
// transaction in the log, and it stays open, across epoch bumps, until
// AppendMarker writes a control batch (attributes transactional|control)
// holding one COMMIT or ABORT marker record for that producer; the broker
// calls it for the transaction coordinator. Control batches carry no
// sequence numbers, and the idempotence rules do not apply to them. A
// marker stamped with an older coordinator epoch than the producer's last
// marker is refused (ErrCoordinatorFenced): it comes from a coordinator
// that has been replaced, and could otherwise end a transaction begun
// since. A marker whose epoch the coordinator bumped past the
// transaction's batches (transaction version 2; AppendBumpedMarker) is
// refused at the producer's current epoch while a transaction is open: it
// is the late marker of the transaction before. A marker that moves the
// producer to a newer epoch forgets the old epoch's batches, so the next
// transaction's first batch, at sequence 0 again, is not taken for a retry.
//
// The last stable offset (LastStableOffset) is the first offset of the
// oldest open transaction, or the high watermark when none is open.
// ReadCommitted returns nothing at or beyond it, together with the aborted
// transactions that overlap what it returns (AbortedTransactions), so a
// read_committed client drops those producers' batches without the broker
// reading any records. An ABORT marker appends an entry (producer id, first
// offset, marker offset, last stable offset) to the .txnindex of the
// segment it is written to; the index is fsynced when its segment is
// rolled.
//
// Each producer's open transaction (its first offset) is part of the
// producer state, and so of the snapshot (version 2; version 1 snapshots,
// written before transactions, are still read). After a crash the .txnindex
// entries and open transactions of the replayed tail are re-derived from
// the batches and markers after the newest snapshot; entries already in the
// index are not added twice, and entries beyond a truncation are dropped.
//
// # Durability and recovery
//
// The recovery point is an offset below which everything has been fsynced;
// it is persisted by Flush, at every roll and at Close. Close also writes a
// clean-shutdown marker. Open with the marker trusts the files and reads only
// the last segment's indexes and the few batches after their last entry, so
// a clean open does not depend on the log's size. Open without it validates
// every batch from the segment containing the recovery point (framing, offset
// continuity, CRC-32C), truncates at the first bad batch, deletes any later
// segments, and rebuilds the indexes. Indexes are never trusted blindly: a
// missing, short or inconsistent index is rebuilt from its .log file when its
// segment is first used.
//
// A new log writes no checkpoint and no leader-epoch cache (a missing file
// reads as the empty log's), so creating a partition costs no fsync; an
// Open that changes nothing rewrites nothing. Through a LogDir a new log
// writes nothing at all until it needs a file (unborn.go): its directory,
// first segment and the owner's files (Log.AddFile: partition.metadata)
// are created by its first write, truncation or read of its segment, and
// closing a log never written leaves no directory. A directory found at
// its path then is not the log's: the LogDir's in-the-way function
// (LogDir.SetInTheWay) sets it aside or accepts it; nothing in it is
// written over. Delete (and RemoveLogDir, for a directory without an open
// log) removes only the files a log writes (IsLogFile) and the owner's
// (Config.OwnedFiles), and the directory when nothing else is left in it.
//
// # Many logs: LogDir
//
// A broker with thousands of partitions opens and closes them through a
// LogDir (logdir.go), Kafka's LogManager for one log dir: the logs' fsyncs
// are left to LogDir.Sync, one syncfs(2) for all of them (the atomic
// replacements of checkpoints and snapshots renamed into place after it,
// then a second one; where there is no syncfs, an fsync of every file and
// directory under the LogDir, sys_other.go), and instead of a clean-shutdown marker per log
// CloseLogs writes one list of the logs it closed cleanly, after the sync;
// the next start trusts the logs it names and removes it in its first
// Sync, before anything is appended. Parallel runs the opens and closes
// several at a time (Kafka's num.recovery.threads.per.data.dir).
//
// # Open files
//
// A segment's .log file is opened when it is first used, not when its log
// is opened, and a LogDir keeps at most SetMaxOpenFiles segments open
// (DefaultMaxOpenFiles: half of RLIMIT_NOFILE, at most
// (vm.max_map_count - 8192) / 2), closing those unused longest, with the
// read-only mappings of their indexes, and reopening them when needed
// (filecache.go). Kafka keeps every segment open and mapped instead, so
// 100,000 partitions per broker need more files than a process may have.
// Whoever uses a file pins it (readers, a Slice until Release, the writer,
// the cleaner, recovery, truncation, flushes): a pinned file is never
// closed, so the bound is exceeded only by files in use at once. A file
// written since its last fsync is fsynced before it is closed, and a
// failure of that fsync is sticky for the log's appends and flushes, as
// any failed fsync is. A segment whose files are removed while it is
// still read keeps its file open until its last reference, since its path
// may name another file by then (the cleaner's swap). A log opened alone
// (Open) keeps its files open once used.
//
// # Retention
//
// ApplyRetention deletes whole segments from the front of the log: those
// entirely below the log start offset, those whose largest timestamp is older
// than retention.ms, and the oldest while the log exceeds retention.bytes.
// DeleteRecordsBefore moves the log start offset (DeleteRecords). The log
// start offset is persisted in the checkpoint file whenever it moves.
//
// # Compaction
//
// Clean is Kafka's log cleaner for cleanup.policy=compact (cleaner.go has
// the rules): it keeps the latest record of every key in the segments below
// the active one and below the last stable offset, dropping older records,
// expired tombstones, keyless records, aborted transactional data and
// markers no longer needed, without ever changing an offset. Its key map
// (OffsetMap) has a fixed size; a map that fills ends a pass, and Clean
// runs passes until the dirty part is covered. Cleaned segments replace the
// originals through .cleaned and .swap files that Open rolls back or
// completes; the first dirty offset is kept in cleaner-offset-checkpoint.
// Cleanable reports the dirty ratio the broker's cleaner threads schedule
// by. Offsets inside a segment may therefore have gaps, which recovery
// accepts; the last batch of every segment is kept (emptied if need be) so
// that segments still follow each other without a gap.
//
// # Replication support
//
// The log knows nothing of clusters but has what a replica needs (Kafka's
// UnifiedLog follower and leader paths):
//
//   - Config.ReplicatedHighWatermark: appends move only the log end offset;
//     the owner moves the high watermark with SetHighWatermark (monotone,
//     clamped to the log end offset; its file position comes from a queue of
//     recent batch ends, else from the offset index and batch headers). Read,
//     ReadCommitted, the last stable offset and Notify are relative to it as
//     in the default mode, and a transaction ended by a marker not yet below
//     it still holds the last stable offset back (Kafka's unreplicated
//     transactions: the marker may be lost with this leader);
//     ReadForFollower reads up to the log end offset,
//     and Notify also fires on appends. The high watermark is persisted in a
//     v2 checkpoint and restored on Open as min(persisted, log end offset).
//     Retention deletes only segments below it.
//   - AppendAsFollower appends the records of a Fetch response at their own
//     offsets and leader epochs, byte for byte, rebuilding producer and
//     transaction state without the idempotence checks, so a new leader
//     recognises a retried batch.
//   - TruncateTo cuts the log at an offset (a batch containing it goes
//     too); TruncateFullyAndStartAt restarts it empty at an offset. Both are
//     crash safe: an interrupted truncation reopens to a prefix of the old
//     log, never with a later segment brought back.
//   - The leader-epoch cache (leader-epoch-checkpoint) maps each leader
//     epoch to its first offset, filled from the batches' partitionLeaderEpoch
//     and AssignLeaderEpoch, cut by truncation and by the log start offset,
//     rebuilt from the batch headers when its file is missing or damaged.
//     An entry added at the end (by a batch, or a replica becoming
//     leader) changes only the cache in memory, so neither a partition's
//     first write nor a leadership change (thousands at once in a
//     failover) writes a file; the file is written and synced before a
//     recovery point beyond it is persisted (flush, roll, Close), and
//     after a crash the batches recovery revalidates give their entries
//     again.
//     EndOffsetForLeaderEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279).
//
// # Errors
//
// Rejected batches give ErrCorruptBatch, ErrInvalidRecord or
// ErrUnsupportedMagic; follower batches that do not continue the log
// ErrOffsetMismatch; idempotence violations ErrOutOfOrderSequence or
// ErrInvalidProducerEpoch; file failures a *StorageError wrapping the cause.
// A failed write or fsync is sticky: the log refuses further appends, since
// the file's state after a failed fsync is unknown.
//
// # Locks
//
// The order of storage's locks (Log.flushMu, Log.mu, Log.ckptMu, a
// segment's loadMu, its file's lock, its index files' locks, and the
// LogDir's file cache lock) among the program's is written in
// docs/LOCK_ORDER.md.
package storage
