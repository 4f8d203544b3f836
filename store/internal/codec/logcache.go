package codec

import (
	"container/list"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// DefaultLogCacheBytes is the default budget of a LogCache.
const DefaultLogCacheBytes = 32 << 20

// LogCache holds, for the loads of one store, the decoded message log of
// the runs it loaded, so that loading a run again decodes only what was
// appended since, and copies nothing: segments and step rows are never
// modified once written, and a run's log only grows.
//
// A run's entry is its log up to the last step loaded, decoded from its
// closed segments and the step rows of its open segment (the rows after
// the last segment), one array that the states loaded share, each
// holding a capped prefix (log[:n:n], as the states of one Steps
// iteration do): appending to a state's messages copies them, and the
// cache appends only past every prefix it handed out. A state's messages
// are therefore read-only, as they always were for Steps.
//
// What a load reads and verifies (LogPlan):
//
//   - the loaded step's row, always, with its checksum;
//   - every segment before the step's own segment, always, but the
//     bodies only of those the entry does not hold: the others' extents
//     and stored checksums are compared with the entry's. A segment
//     whose row was replaced or resealed since it was cached is noticed
//     (the entry is dropped and the load reads everything, verifying
//     every checksum, as without a cache); one whose bytes rotted under
//     an unchanged checksum is not noticed by this store's loads while
//     it holds the entry. Re-checking the bodies' checksums on every
//     load would notice it, at the cost of reading every segment's body
//     (measured in docs/performance.md);
//   - the rows of the step's segment after those the entry holds: the
//     rows it holds were verified when read and are not read again,
//     except the loaded step's own.
//
// Steps, StepsFrom's iteration and Export never use the cache: they read
// and verify every record they return. A load of a step before the
// entry's open segment (LoadStep of the history) reads everything, as
// without a cache.
//
// The cache is bounded by bytes: an entry counts its array (about 128
// bytes a message of capacity) and the bytes of its messages' strings and
// byte slices. The least recently used runs are evicted first; a run whose
// log alone passes the budget is not kept. A LogCache is safe for
// concurrent use; a nil one caches nothing.
type LogCache struct {
	mu     sync.Mutex
	budget int64
	size   int64
	runs   map[int64]*list.Element
	lru    list.List // of *runLog, the most recently used first
	stats  LogCacheStats
}

// runLog is a run's cached log at step k: the messages of the segments
// segs (steps before open, which they hold base messages of) and of the
// rows open..k. Only the cache's methods change it, under its lock, and
// only by appending past the lengths any snapshot (LogPlan) holds.
type runLog struct {
	rk   int64
	msgs []core.Message
	segs []Segment // without their bodies
	open int
	base int
	ends []int   // ends[i]: the messages of steps up to open+i
	sums []int64 // sums[i]: the checksum of step open+i's row
	data int64   // the bytes of the messages' strings and slices
	size int64
}

func (e *runLog) k() int { return e.open + len(e.ends) - 1 }

func (e *runLog) resize() int64 {
	old := e.size
	e.size = int64(cap(e.msgs))*msgSize + e.data + int64(cap(e.segs))*int64(unsafe.Sizeof(Segment{})) +
		int64(cap(e.ends)+cap(e.sums))*8
	return e.size - old
}

var msgSize = int64(unsafe.Sizeof(core.Message{}))

// NewLogCache returns a cache holding at most budget bytes; nil (no cache)
// when budget is negative, and DefaultLogCacheBytes when zero.
func NewLogCache(budget int64) *LogCache {
	switch {
	case budget < 0:
		return nil
	case budget == 0:
		budget = DefaultLogCacheBytes
	}
	return &LogCache{budget: budget, runs: map[int64]*list.Element{}}
}

// LogCacheStats is what a LogCache holds and how it served.
type LogCacheStats struct {
	Runs          int
	Bytes, Budget int64
	// Loads that used an entry; loads that read everything (no entry, an
	// older step); entries found stale (then read everything too);
	// entries evicted, or not kept for passing the budget alone.
	Hits, Misses, Stale, Evicted int64
}

// Stats reports the cache's size and counters.
func (c *LogCache) Stats() LogCacheStats {
	if c == nil {
		return LogCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Runs, st.Bytes, st.Budget = c.lru.Len(), c.size, c.budget
	return st
}

// ErrStale reports that what the store holds is not what a LogPlan's
// entry was built from (the entry is dropped): load again with FullPlan.
var ErrStale = errors.New("the cached log does not match the store")

// LogPlan is what a load of step Seq reads: the segments before the
// step's segment, with their bodies from step BodiesFrom on and without
// before it (extents and checksums only), and the opened, verified step
// rows from RowsFrom up to, not including, Seq.
type LogPlan struct {
	Seq, BodiesFrom, RowsFrom int
	// A snapshot of the run's entry (nil: read everything).
	e    *runLog
	msgs []core.Message
	segs []Segment
	open int
	base int
	ends []int
	sums []int64
}

// FullPlan reads everything step seq's state needs: every segment's body,
// every row of its segment.
func FullPlan(seq int) LogPlan {
	return LogPlan{Seq: seq, RowsFrom: SegmentStart(seq + 1)}
}

// Plan is what to read to load step seq of run rk, given what the cache
// holds of the run.
func (c *LogCache) Plan(rk int64, seq int) LogPlan {
	p := FullPlan(seq)
	if c == nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.runs[rk]
	if !ok || p.RowsFrom < el.Value.(*runLog).open {
		return p
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*runLog)
	p.e, p.msgs, p.segs, p.open, p.base, p.ends, p.sums = e, e.msgs, e.segs, e.open, e.base, e.ends, e.sums
	p.BodiesFrom = e.open
	if p.RowsFrom == e.open { // the same open segment: its rows after k
		p.RowsFrom = max(p.RowsFrom, min(e.k()+1, seq))
	}
	return p
}

// Load assembles the messages of the state at the opened row of step
// p.Seq of run rk from the segments read (all those before its segment,
// in order, with bodies as p says) and the rows read (from p.RowsFrom),
// and what p's entry holds; it remembers the result. With an entry that
// disagrees with them it returns ErrStale. Its errors name the run and
// step.
func (c *LogCache) Load(runID string, rk int64, p LogPlan, row *Row, segs []Segment, rows []Row, load Load) ([]core.Message, error) {
	if p.e == nil {
		return c.loadFull(runID, rk, row, segs, rows, load)
	}
	log, err := c.loadCached(runID, rk, p, row, segs, rows, load)
	if errors.Is(err, ErrStale) {
		c.mu.Lock()
		if el, ok := c.runs[rk]; ok && el.Value.(*runLog) == p.e {
			c.remove(el)
		}
		c.stats.Stale++
		c.mu.Unlock()
	}
	return log, err
}

// loadFull assembles the log from everything read, as a store without
// a cache does, and remembers it.
func (c *LogCache) loadFull(runID string, rk int64, row *Row, segs []Segment, rows []Row, load Load) ([]core.Message, error) {
	b := SegmentStart(row.Seq + 1)
	// Room for a few turns more, for later loads to append in place.
	log := make([]core.Message, 0, row.MsgCount+min(row.MsgCount/4+16, 1024))
	if b > 0 {
		if err := CheckSegments(runID, rk, row.Seq, row.MsgCount, segs); err != nil {
			return nil, err
		}
		var err error
		if log, err = DecodeSegments(log, segs, load); err != nil {
			return nil, fmt.Errorf("run %s step %d: %w", runID, row.Seq, err)
		}
	}
	e := &runLog{rk: rk, open: b, base: len(log)}
	if row.Seq < b {
		if len(log) != row.MsgCount {
			return nil, fmt.Errorf("%w: run %s step %d: holds %d messages, the segments %d", store.ErrCorrupt, runID, row.Seq, row.MsgCount, len(log))
		}
	} else {
		var err error
		if log, e.ends, e.sums, err = appendRows(runID, log, 0, b, row, rows, nil, nil, load); err != nil {
			return nil, err
		}
	}
	if c != nil {
		e.msgs, e.data = log, dataBytes(log)
		e.segs = make([]Segment, len(segs))
		for i, sg := range segs {
			sg.Body = nil
			e.segs[i] = sg
		}
		c.mu.Lock()
		c.stats.Misses++
		if el, ok := c.runs[rk]; !ok || e.open > el.Value.(*runLog).open ||
			e.open == el.Value.(*runLog).open && e.k() > el.Value.(*runLog).k() {
			if ok {
				c.remove(el)
			}
			e.resize()
			c.add(e)
		}
		c.mu.Unlock()
	}
	return log[:row.MsgCount:row.MsgCount], nil
}

// appendRows appends to log, which holds the messages after the first skip
// of the run's log, the messages of rows (the opened, verified rows from
// step from on) and then of row, checking that they follow each other;
// with the messages counts after each and their rows' checksums appended
// to ends and sums.
func appendRows(runID string, log []core.Message, skip, from int, row *Row, rows []Row, ends []int, sums []int64, load Load) ([]core.Message, []int, []int64, error) {
	want := from
	var err error
	for i := range rows {
		r := &rows[i]
		if r.Seq != want {
			return nil, nil, nil, fmt.Errorf("%w: run %s step %d: step %d is missing", store.ErrCorrupt, runID, row.Seq, want)
		}
		want++
		if log, err = r.appendAfter(runID, log, skip, nil, load); err != nil {
			return nil, nil, nil, err
		}
		ends, sums = append(ends, skip+len(log)), append(sums, r.Sum)
	}
	if want != row.Seq {
		return nil, nil, nil, fmt.Errorf("%w: run %s step %d: step %d is missing", store.ErrCorrupt, runID, row.Seq, want)
	}
	if log, err = row.appendAfter(runID, log, skip, nil, load); err != nil {
		return nil, nil, nil, err
	}
	return log, append(ends, skip+len(log)), append(sums, row.Sum), nil
}

// loadCached assembles the log from p's entry, the segments after it and
// the rows after it, and extends the entry.
func (c *LogCache) loadCached(runID string, rk int64, p LogPlan, row *Row, segs []Segment, rows []Row, load Load) ([]core.Message, error) {
	seq, n := row.Seq, row.MsgCount
	b := SegmentStart(seq + 1)
	// The segments the entry holds must be the ones stored.
	if len(segs) < len(p.segs) {
		return nil, ErrStale
	}
	for i, sg := range segs[:len(p.segs)] {
		held := p.segs[i]
		if sg.From != held.From || sg.To != held.To || sg.First != held.First || sg.N != held.N || sg.Sum != held.Sum {
			return nil, ErrStale
		}
	}
	newSegs := segs[len(p.segs):]
	for _, sg := range newSegs {
		if sg.From < p.open || sg.Body == nil {
			return nil, ErrStale // a segment stored before the entry's open one
		}
	}
	held := len(p.msgs)
	var ends []int
	var sums []int64
	add := make([]core.Message, 0, max(n-held, 0))
	count := p.base // the messages before step b
	switch {
	case b == p.open && len(newSegs) > 0:
		return nil, ErrStale
	case b == p.open && (seq < b || seq <= p.open+len(p.ends)-1):
		// All held: the step that closed the last segment held, or one
		// of the rows held.
		if seq >= b {
			if p.sums[seq-b] != row.Sum {
				return nil, ErrStale
			}
			count = p.ends[seq-b]
		}
		if count != n {
			return nil, ErrStale
		}
		c.count(func(st *LogCacheStats) { st.Hits++ })
		return p.msgs[:n:n], nil
	case b == p.open:
		// Later rows of the open segment. Clipped, so that appending
		// copies: the entry's own may have grown meanwhile.
		ends, sums = slices.Clip(p.ends), slices.Clip(p.sums)
	default:
		// The open segment closed, and maybe more: the segments from it
		// on, decoded past the messages held, then the rows from b.
		if err := checkSegmentsAfter(runID, rk, seq, n, p.base, newSegs); err != nil {
			return nil, err
		}
		for _, sg := range newSegs {
			count += sg.N
		}
		if count < held || n < count {
			return nil, ErrStale
		}
		if count > held {
			dec, err := DecodeSegments(make([]core.Message, 0, count-p.base), newSegs, load)
			if err != nil {
				return nil, fmt.Errorf("run %s step %d: %w", runID, seq, err)
			}
			add = append(add, dec[held-p.base:]...)
		}
	}
	if seq >= b {
		var err error
		if add, ends, sums, err = appendRows(runID, add, held, p.RowsFrom, row, rows, ends, sums, load); err != nil {
			return nil, err
		}
	} else if held+len(add) != n {
		return nil, fmt.Errorf("%w: run %s step %d: holds %d messages, the segments %d", store.ErrCorrupt, runID, seq, n, held+len(add))
	}
	return c.extend(p, b, count, newSegs, add, ends, sums), nil
}

// extend appends add to p's entry when it is still the run's and still
// holds what p saw (or more of the same), and returns the state's log: the
// entry's first n messages, or else a copy of p's and add.
func (c *LogCache) extend(p LogPlan, b, base int, newSegs []Segment, add []core.Message, ends []int, sums []int64) []core.Message {
	n := len(p.msgs) + len(add)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Hits++
	e := p.e
	if el, ok := c.runs[e.rk]; !ok || el.Value.(*runLog) != e || e.open != p.open || len(e.segs) != len(p.segs) {
		// Evicted, replaced or moved on meanwhile.
		return slices.Clip(append(p.msgs[:len(p.msgs):len(p.msgs)], add...))
	}
	if len(e.msgs) >= n {
		// Another load appended as much (the same messages: the log only
		// grows).
		if b == e.open && len(e.ends) < len(ends) {
			e.ends, e.sums = append(e.ends, ends[len(e.ends):]...), append(e.sums, sums[len(e.sums):]...)
		}
		return e.msgs[:n:n]
	}
	from := len(e.msgs) - len(p.msgs) // what another load appended already
	e.msgs = append(e.msgs, add[from:]...)
	e.data += dataBytes(add[from:])
	if b > e.open {
		for _, sg := range newSegs {
			sg.Body = nil
			e.segs = append(e.segs, sg)
		}
		e.open, e.base = b, base
		e.ends, e.sums = slices.Clip(ends), slices.Clip(sums)
	} else {
		e.ends, e.sums = append(e.ends, ends[len(e.ends):]...), append(e.sums, sums[len(e.sums):]...)
	}
	c.size += e.resize()
	c.evict(e)
	return e.msgs[:n:n]
}

// count updates the counters.
func (c *LogCache) count(fn func(*LogCacheStats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(&c.stats)
}

// add remembers e, evicting the least recently used runs to make room.
func (c *LogCache) add(e *runLog) {
	c.runs[e.rk] = c.lru.PushFront(e)
	c.size += e.size
	c.evict(e)
}

// evict evicts runs, the least recently used first, until the cache is
// within its budget; e, the one just used, last.
func (c *LogCache) evict(e *runLog) {
	for c.size > c.budget {
		el := c.lru.Back()
		if el.Value.(*runLog) == e && c.lru.Len() > 1 {
			el = el.Prev()
		}
		c.remove(el)
		c.stats.Evicted++
	}
}

func (c *LogCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*runLog)
	delete(c.runs, e.rk)
	c.size -= e.size
}

// dataBytes is about what msgs hold beyond their own structs: the bytes of
// their strings and byte slices, and the structs of their calls,
// attachments and opaque data.
func dataBytes(msgs []core.Message) int64 {
	var n int64
	for i := range msgs {
		m := &msgs[i]
		n += int64(len(m.Role) + len(m.Content) + len(m.CallID) + len(m.Name))
		n += int64(len(m.Calls)) * int64(unsafe.Sizeof(core.ToolCall{}))
		for _, c := range m.Calls {
			n += int64(len(c.ID) + len(c.Name) + len(c.Args) + len(c.Raw))
		}
		n += int64(len(m.Attachments)) * int64(unsafe.Sizeof(core.Attachment{}))
		for _, a := range m.Attachments {
			n += int64(len(a.MIME) + len(a.Data))
		}
		if m.Opaque != nil {
			n += int64(unsafe.Sizeof(core.Opaque{})) + int64(len(m.Opaque.Provider)+len(m.Opaque.Data))
		}
	}
	return n
}
