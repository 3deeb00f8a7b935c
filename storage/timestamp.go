package storage

// OffsetForTimestamp returns the first record at or after the log start
// offset whose timestamp is >= ts, with that timestamp (Kafka's ListOffsets
// by timestamp). It uses the segments' largest timestamps to pick the
// segment, the time index to skip the records known to be older, and scans
// the batches from there; inside a batch the exact record is found when the
// batch is uncompressed or Config.Decompress is set, else the batch's first
// offset and its maxTimestamp are returned. ok is false when no record is that
// recent (I/O errors are logged and also give false).
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool) {
	for attempt := 0; attempt < 100; attempt++ {
		offset, timestamp, ok, retry := l.offsetForTimestamp(ts)
		if !retry {
			return offset, timestamp, ok
		}
	}
	return 0, 0, false
}

func (l *Log) offsetForTimestamp(ts int64) (offset, timestamp int64, ok, retry bool) {
	if l.closed.Load() {
		return 0, 0, false, false
	}
	st, lso, segs := l.end.Load(), l.logStartOffset.Load(), l.segments()
	decompress := l.decompress()
	for i, s := range segs {
		if !s.acquire() {
			return 0, 0, false, true
		}
		offset, timestamp, ok, err := l.findTimestampIn(segs, i, st.readable(s), ts, lso, decompress)
		s.release()
		if err != nil {
			l.logger.Error("offset for timestamp", "file", s.logPath, "err", err)
			return 0, 0, false, false
		}
		if ok {
			return offset, timestamp, true, false
		}
	}
	return 0, 0, false, false
}

func (l *Log) decompress() func(int8, []byte) ([]byte, error) { return l.rcfg.Load().Decompress }

// findTimestampIn looks for the first record >= ts at or after minOffset in
// segs[i], which the caller holds.
func (l *Log) findTimestampIn(segs []*segment, i int, readable, ts, minOffset int64, decompress func(int8, []byte) ([]byte, error)) (int64, int64, bool, error) {
	s := segs[i]
	if readable == 0 {
		return 0, 0, false, nil
	}
	f, err := s.use()
	if err != nil {
		return 0, 0, false, err
	}
	defer s.unuse()
	if err := l.ensureLoaded(segs, i); err != nil {
		return 0, 0, false, err
	}
	if mt := s.maxTs.Load(); mt == nil || mt.ts < ts {
		return 0, 0, false, nil
	}
	// Every record up to the time index's last entry older than ts is older;
	// the entry is used once the batch it names confirms it.
	start := max(s.base, minOffset)
	if ets, rel, ok := s.timeIndex.lookupBefore(ts); ok {
		_, h, found, err := s.locate(s.base+rel, readable)
		if err == nil && found && h.LastOffset() == s.base+rel && h.MaxTimestamp == ets {
			start = max(start, s.base+rel+1)
		}
	}
	pos, _, found, err := s.locate(start, readable)
	if err != nil || !found {
		return 0, 0, false, err
	}
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	w := window{r: f, path: s.logPath, end: readable, buf: *bp}
	for pos < readable {
		hb, err := w.header(pos)
		if err != nil {
			return 0, 0, false, err
		}
		h := parseHeader(hb)
		if h.MaxTimestamp >= ts && h.LastOffset() >= start {
			b, err := s.readBatch(pos, h)
			if err != nil {
				return 0, 0, false, err
			}
			off, t, found, err := findRecordByTimestamp(b, ts, start, decompress)
			if err != nil || found {
				return off, t, found, err
			}
		}
		pos += h.Size()
	}
	return 0, 0, false, nil
}

// MaxTimestamp returns the record with the largest timestamp in the log, and
// its offset (Kafka's ListOffsets with timestamp -3); on ties, the first
// such record. Inside a compressed batch without Config.Decompress the
// batch's first offset is returned. As in Kafka, the segments' largest
// timestamps are used as they are, so the record may lie below a log start
// offset that DeleteRecordsBefore moved into the first segment. ok is false
// when the log has no timestamps.
func (l *Log) MaxTimestamp() (timestamp, offset int64, ok bool) {
	for attempt := 0; attempt < 100; attempt++ {
		timestamp, offset, ok, retry := l.maxTimestamp()
		if !retry {
			return timestamp, offset, ok
		}
	}
	return 0, 0, false
}

func (l *Log) maxTimestamp() (timestamp, offset int64, ok, retry bool) {
	if l.closed.Load() {
		return 0, 0, false, false
	}
	st, segs := l.end.Load(), l.segments()
	best, bestTs := -1, int64(-1)
	for i, s := range segs {
		if !s.acquire() {
			return 0, 0, false, true
		}
		err := l.ensureLoaded(segs, i)
		mt := s.maxTs.Load()
		s.release()
		if err != nil {
			l.logger.Error("max timestamp", "file", s.logPath, "err", err)
			return 0, 0, false, false
		}
		if mt != nil && mt.ts > bestTs && st.readable(s) > 0 {
			best, bestTs = i, mt.ts
		}
	}
	if best < 0 {
		return 0, 0, false, false
	}
	s := segs[best]
	if !s.acquire() {
		return 0, 0, false, true
	}
	defer s.release()
	readable := st.readable(s)
	pos, h, found, err := s.locate(s.maxTs.Load().offset, readable)
	if err == nil && found {
		var b []byte
		if b, err = s.readBatch(pos, h); err == nil {
			var off, t int64
			off, t, found, err = findRecordByTimestamp(b, bestTs, h.BaseOffset, l.decompress())
			if err == nil && found {
				return t, off, true, false
			}
		}
	}
	if err != nil {
		l.logger.Error("max timestamp", "file", s.logPath, "err", err)
	}
	return 0, 0, false, false
}
