package codec

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The message log of a run lives in the steps that appended to it (each
// step row holds its new messages). Every SegmentSteps steps, the checkpoint
// of the last step of the stretch also copies the messages of the stretch
// into one segment, so that the state at step N is assembled from
// N/SegmentSteps segments plus fewer than SegmentSteps step rows, instead
// of from N step rows. A segment's body is the messages' encodings,
// compressed with S2 (a stretch of a conversation compresses about 16x).

// SegmentSteps is how many steps one segment covers.
const SegmentSteps = 64

// SegmentStart is the first step of the segment holding step seq.
func SegmentStart(seq int) int { return seq / SegmentSteps * SegmentSteps }

// ClosesSegment reports whether step seq is the last of its segment.
func ClosesSegment(seq int) bool { return (seq+1)%SegmentSteps == 0 }

// OpenSegment is the part of a run's current segment written so far: the
// messages of steps SegmentStart(seq)..seq, which start at message first.
// A store remembers it for the runs it writes, so that closing a segment
// needs no read-back; a remembered segment is only ever used for the step
// right after its seq, so a stale or missing one (another process appended,
// a transaction failed) only means reading back.
type OpenSegment struct {
	Seq   int
	First int
	Body  []byte // the messages' encodings, uncompressed
	// Written: the segment ended at Seq and is stored; only its buffer is
	// kept, for the next segment to fill.
	Written bool
}

// Extend returns the open segment after the opened step row, given the one
// after the step before (nil when unknown) and the message count before
// row; nil when it cannot be known without reading back.
func (o *OpenSegment) Extend(row *Row, before int) *OpenSegment {
	if row.Seq == SegmentStart(row.Seq) {
		// Room for a few steps at this step's size, and append's
		// doubling past it: most runs end long before their first
		// segment does (room for a whole segment up front cost a short
		// run 16 KB, the largest allocation of a served step); the last
		// segment's buffer when it has that room.
		room := max(4*len(row.Msgs), 1<<10)
		var body []byte
		if o != nil && o.Written && o.Seq == row.Seq-1 && cap(o.Body) >= room {
			body = o.Body[:0]
		} else {
			body = make([]byte, 0, room)
		}
		return &OpenSegment{Seq: row.Seq, First: before, Body: append(body, row.Msgs...)}
	}
	if o == nil || o.Written || o.Seq != row.Seq-1 {
		return nil
	}
	// Appending may write into o.Body's spare capacity, never into o's own
	// bytes, so o stays valid. Two extensions of one o share that spare
	// room only when the first one's transaction failed (the store then
	// still remembers o), and that one is never used.
	return &OpenSegment{Seq: row.Seq, First: o.First, Body: append(o.Body, row.Msgs...)}
}

// WrittenOut is what to remember of o once the segment it completes is
// stored: its buffer, for the next segment.
func (o *OpenSegment) WrittenOut() *OpenSegment {
	return &OpenSegment{Seq: o.Seq, Body: o.Body[:0], Written: true}
}

// Segment is a stored segment: steps From..To, messages First..First+N-1.
type Segment struct {
	From, To int
	First, N int
	// Body is the stored body (compressed); Sum its checksum.
	Body []byte
	Sum  int64
}

// NewSegment is the segment of steps from..to holding n messages from
// first, whose encodings are msgs, with its body compressed and its
// checksum set for run rk.
func NewSegment(rk int64, from, to, first, n int, msgs []byte) Segment {
	sg := Segment{From: from, To: to, First: first, N: n, Body: append(s2.Encode(nil, msgs), formatS2)}
	sg.Sum = SegmentSum(rk, from, to, first, n, sg.Body)
	return sg
}

// messages decompresses the segment's body.
func (sg *Segment) messages() ([]byte, error) {
	b := sg.Body
	if len(b) == 0 {
		return nil, errBody
	}
	switch b[len(b)-1] {
	case formatPlain:
		return b[:len(b)-1], nil
	case formatS2:
		n, err := s2.DecodedLen(b[:len(b)-1])
		if err != nil || n > maxBody {
			return nil, fmt.Errorf("%w: %v", errBody, err)
		}
		return s2.Decode(make([]byte, n), b[:len(b)-1])
	}
	return nil, fmt.Errorf("%w: format %d", errBody, b[len(b)-1])
}

// CheckSegments verifies the checksums of segs, read for the state at step
// seq holding msgCount messages, and that they follow each other from
// message 0.
func CheckSegments(runID string, rk int64, seq, msgCount int, segs []Segment) error {
	return checkSegmentsAfter(runID, rk, seq, msgCount, 0, segs)
}

// checkSegmentsAfter is CheckSegments for segments that follow others
// holding count messages.
func checkSegmentsAfter(runID string, rk int64, seq, msgCount, count int, segs []Segment) error {
	for _, sg := range segs {
		if SegmentSum(rk, sg.From, sg.To, sg.First, sg.N, sg.Body) != sg.Sum {
			return fmt.Errorf("%w: run %s step %d: the segment of steps %d-%d (messages %d-%d) fails its checksum",
				store.ErrCorrupt, runID, seq, sg.From, sg.To, sg.First, sg.First+sg.N-1)
		}
		if sg.First != count || sg.N < 0 || sg.N > msgCount-count {
			return fmt.Errorf("%w: run %s step %d: the segment of steps %d-%d holds messages %d-%d, want from %d up to %d",
				store.ErrCorrupt, runID, seq, sg.From, sg.To, sg.First, sg.First+sg.N-1, count, msgCount-1)
		}
		count += sg.N
	}
	return nil
}

// parallelDecodeBytes is the size of segments above which DecodeSegments
// decodes on several goroutines (a variable for the tests).
var parallelDecodeBytes = 64 << 10

// DecodeSegments decodes the messages of segs, checked by CheckSegments,
// into log's spare capacity, a first message stored once read through
// load. Past parallelDecodeBytes the segments are
// shared out among GOMAXPROCS goroutines, each decoding into its segments'
// own slots.
func DecodeSegments(log []core.Message, segs []Segment, load Load) ([]core.Message, error) {
	if len(segs) == 0 {
		return log, nil
	}
	segs, err := inlineSegments(segs, load)
	if err != nil {
		return log, err
	}
	base, total := len(log), 0
	for _, sg := range segs {
		total += sg.N
	}
	log = slices.Grow(log, total)[:base+total]
	all := make([]int, len(segs))
	for i := range all {
		all[i] = i
	}
	if err := decodeInto(log, segs, all, func(sg *Segment) int { return base + sg.First - segs[0].First }); err != nil {
		return log[:base], err
	}
	return log, nil
}

// decodeInto decodes the segments segs[i], i in which, each into its slots
// of log (from at(sg)). Past parallelDecodeBytes the segments are shared
// out among GOMAXPROCS goroutines.
func decodeInto(log []core.Message, segs []Segment, which []int, at func(*Segment) int) error {
	size := 0
	for _, i := range which {
		size += len(segs[i].Body)
	}
	errs := make([]error, len(which))
	decode := func(k int) {
		sg := &segs[which[k]]
		a := at(sg)
		msgs, err := sg.messages()
		if err == nil {
			_, err = DecodeMessages(msgs, sg.N, false, log[a:a:a+sg.N], nil)
		}
		if err != nil {
			errs[k] = fmt.Errorf("the segment of steps %d-%d: %w: %w", sg.From, sg.To, store.ErrCorrupt, err)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(which))
	if size < parallelDecodeBytes || workers < 2 {
		for k := range which {
			decode(k)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for k := int(next.Add(1)) - 1; k < len(which); k = int(next.Add(1)) - 1 {
					decode(k)
				}
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// SegmentFromRows builds the segment that step last (opened) closes from
// the opened rows of its earlier steps and of the step before them (for the
// count the segment starts at), in order; ok is false when it holds no
// message.
func SegmentFromRows(runID string, rk int64, rows []Row, last *Row) (sg Segment, ok bool, err error) {
	from := SegmentStart(last.Seq)
	want := max(from-1, 0)
	first := 0
	var body []byte
	for i := range rows {
		r := &rows[i]
		if r.Seq != want {
			return sg, false, fmt.Errorf("%w: run %s: step %d is missing", store.ErrCorrupt, runID, want)
		}
		want++
		if r.Seq < from {
			first = r.MsgCount
			continue
		}
		body = append(body, r.Msgs...)
	}
	if want != last.Seq {
		return sg, false, fmt.Errorf("%w: run %s: step %d is missing", store.ErrCorrupt, runID, want)
	}
	body = append(body, last.Msgs...)
	n := last.MsgCount - first
	if n == 0 {
		return sg, false, nil
	}
	return NewSegment(rk, from, last.Seq, first, n, body), true, nil
}

// FromOpen builds the segment that step last closes from the open segment
// this store remembers, when it is complete; ok is false when it is not
// (read back with SegmentFromRows) or holds no message (skip is true).
func FromOpen(rk int64, last *Row, open *OpenSegment) (sg Segment, ok, skip bool) {
	if open == nil || open.Written || open.Seq != last.Seq {
		return sg, false, false
	}
	n := last.MsgCount - open.First
	if n <= 0 {
		return sg, false, true
	}
	return NewSegment(rk, SegmentStart(last.Seq), last.Seq, open.First, n, open.Body), true, false
}
