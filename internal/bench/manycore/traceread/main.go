// Command traceread reads a Go execution trace of a served benchmark
// (BenchmarkConcurrentRuns with -test.trace) and prints where its
// goroutines waited: over time, how many ran, were runnable (ready, with
// no processor), were in a system or C call, and how busy the one SQLite
// writer was in C; how long goroutines stayed runnable, and how much of
// that the writers a batch's leader woke; and the writer's
// gaps between two C calls, each a hand-off to another goroutine or a wait
// of the same one, with what it waited on. See docs/performance.md, "The
// sixth round".
//
//	go run . [-writer writeBatch] [-from 40ms] [-to 300ms] [-bucket 20ms] [-gaps 200us] TRACE
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	writer := flag.String("writer", "writeBatch", "a function in the stack of the writer's C calls")
	from := flag.Duration("from", 40*time.Millisecond, "the gaps' window starts this long into the trace")
	to := flag.Duration("to", 300*time.Millisecond, "and ends this long into it")
	bucket := flag.Duration("bucket", 20*time.Millisecond, "the width of a line of the timeline")
	show := flag.Duration("gaps", 200*time.Microsecond, "list the writer's gaps at least this long")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: traceread [flags] TRACE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	a := &analysis{writer: *writer, bucket: *bucket, from: *from, to: *to, show: *show,
		gs: map[trace.GoID]*gor{}, inWriter: map[trace.GoID]trace.Time{}}
	if err := a.read(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	a.report(os.Stdout)
}

// gor is what is known of one goroutine.
type gor struct {
	state trace.GoState // its current state
	since trace.Time
	log   []string // its transitions since it last left a writer's C call
	// byWriter: it was made runnable by a goroutine while that one was a
	// writer (between its first and last C call of a batch, or waking
	// its batch just after).
	byWriter bool
}

// slot is one line of the timeline: goroutine-time in each state, and
// the writer's time in C.
type slot struct{ running, runnable, syscall, procs, writer float64 }

type analysis struct {
	writer            string
	bucket, from, to  time.Duration
	show              time.Duration
	start, last, end  trace.Time
	gs                map[trace.GoID]*gor
	running, runnable int
	syscall, procs    int
	slots             []slot
	runnableSpells    []time.Duration
	inWriter          map[trace.GoID]trace.Time // a writer's C call under way, since
	writerC           time.Duration
	lastWriter        trace.GoID
	lastWriterEnd     trace.Time
	readied           int // goroutines the last writer readied since its last C call
	gaps              []gap
	// runnable time in all, and of goroutines the writer made runnable
	runnableTotal, byWriter time.Duration
	gapLines                []string
}

type gap struct {
	at, d   time.Duration
	handoff bool
}

// advance adds the time since the last event to the timeline.
func (a *analysis) advance(t trace.Time) {
	for from := a.last; a.last != 0 && from < t; {
		i := int(time.Duration(from-a.start) / a.bucket)
		edge := a.start + trace.Time(time.Duration(i+1)*a.bucket)
		edge = min(edge, t)
		for len(a.slots) <= i {
			a.slots = append(a.slots, slot{})
		}
		d := float64(edge - from)
		s := &a.slots[i]
		s.running += float64(a.running) * d
		s.runnable += float64(a.runnable) * d
		s.syscall += float64(a.syscall) * d
		s.procs += float64(a.procs) * d
		from = edge
	}
	a.last = t
}

// writerSpan adds a writer's C call, from t0 to t1, to the timeline.
func (a *analysis) writerSpan(t0, t1 trace.Time) {
	a.writerC += time.Duration(t1 - t0)
	for t := t0; t < t1; {
		i := int(time.Duration(t-a.start) / a.bucket)
		edge := min(a.start+trace.Time(time.Duration(i+1)*a.bucket), t1)
		for len(a.slots) <= i {
			a.slots = append(a.slots, slot{})
		}
		a.slots[i].writer += float64(edge - t)
		t = edge
	}
}

func count(n *int, from, to, state trace.GoState) {
	if from == state {
		*n--
	}
	if to == state {
		*n++
	}
}

func (a *analysis) read(r io.Reader) error {
	tr, err := trace.NewReader(r)
	if err != nil {
		return err
	}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if a.start == 0 {
			a.start = ev.Time()
		}
		a.end = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		switch st.Resource.Kind {
		case trace.ResourceProc:
			a.advance(ev.Time())
			from, to := st.Proc()
			if from == trace.ProcRunning {
				a.procs--
			}
			if to == trace.ProcRunning {
				a.procs++
			}
		case trace.ResourceGoroutine:
			a.goroutine(ev, st)
		}
	}
}

func (a *analysis) goroutine(ev trace.Event, st trace.StateTransition) {
	id := st.Resource.Goroutine()
	from, to := st.Goroutine()
	now := ev.Time()
	if by := ev.Goroutine(); by == a.lastWriter && by != id && to == trace.GoRunnable {
		a.readied++
	}
	a.advance(now)
	count(&a.running, from, to, trace.GoRunning)
	count(&a.runnable, from, to, trace.GoRunnable)
	count(&a.syscall, from, to, trace.GoSyscall)
	g := a.gs[id]
	if g == nil {
		g = &gor{}
		a.gs[id] = g
	}
	if g.state == trace.GoRunnable {
		d := time.Duration(now - g.since)
		a.runnableSpells = append(a.runnableSpells, d)
		if g.byWriter {
			a.byWriter += d
		}
		a.runnableTotal += d
	}
	if to == trace.GoRunnable {
		by := ev.Goroutine()
		g.byWriter = by != trace.NoGoroutine && by != id && by == a.lastWriter && now-a.lastWriterEnd < trace.Time(time.Millisecond)
	}
	if g.log != nil && to != trace.GoSyscall {
		g.log = append(g.log, fmt.Sprintf("%s %v -> %s%s", g.state, time.Duration(now-g.since), to, where(st.Stack)))
	}
	if from == trace.GoSyscall {
		if t0, ok := a.inWriter[id]; ok {
			delete(a.inWriter, id)
			a.writerSpan(t0, now)
			a.writerEnded(id, t0, now)
		}
	}
	if to == trace.GoSyscall && a.inStack(st.Stack) {
		a.inWriter[id] = now
	}
	g.state, g.since = to, now
}

// writerEnded records the gap before a writer's C call from t0 to t1.
func (a *analysis) writerEnded(id trace.GoID, t0, t1 trace.Time) {
	if a.lastWriterEnd != 0 && t0 > a.lastWriterEnd {
		gp := gap{at: time.Duration(t0 - a.start), d: time.Duration(t0 - a.lastWriterEnd), handoff: id != a.lastWriter}
		if gp.at >= a.from && gp.at < a.to {
			a.gaps = append(a.gaps, gp)
			if gp.d >= a.show {
				kind := "the same writer"
				if gp.handoff {
					kind = fmt.Sprintf("a hand-off (the last writer readied %d goroutines since its C call)", a.readied)
				}
				line := fmt.Sprintf("%v at %v, %s", gp.d, gp.at.Round(time.Microsecond), kind)
				if l := a.gs[id].log; len(l) > 0 {
					line += ": " + strings.Join(l, " | ")
				}
				a.gapLines = append(a.gapLines, line)
			}
		}
	}
	a.lastWriter, a.lastWriterEnd, a.readied = id, t1, 0
	a.gs[id].log = []string{}
}

func (a *analysis) inStack(s trace.Stack) bool {
	for fr := range s.Frames() {
		if strings.Contains(fr.Func, a.writer) {
			return true
		}
	}
	return false
}

// where names the innermost frame of s and its nearest stepwise callers.
func where(s trace.Stack) string {
	var names []string
	for fr := range s.Frames() {
		if len(names) == 0 || strings.Contains(fr.Func, "stepwise") {
			names = append(names, fr.Func[strings.LastIndex(fr.Func, "/")+1:])
		}
		if len(names) == 3 {
			break
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " in " + strings.Join(names, " < ")
}

func (a *analysis) report(w io.Writer) {
	total := time.Duration(a.end - a.start)
	fmt.Fprintf(w, "trace: %v; the writer (%s) in C %v\n\n", total.Round(time.Millisecond), a.writer, a.writerC.Round(time.Millisecond))
	fmt.Fprintf(w, "goroutines (mean over each %v): running, runnable, in a system or C call; processors running; the writer's share in C\n", a.bucket)
	for i, s := range a.slots {
		d := float64(a.bucket)
		fmt.Fprintf(w, "%6v  %6.2f %7.2f %6.2f   %6.2f   %4.0f%%\n", time.Duration(i)*a.bucket, s.running/d, s.runnable/d, s.syscall/d, s.procs/d, 100*s.writer/d)
	}
	if n := len(a.runnableSpells); n > 0 {
		l := a.runnableSpells
		slices.Sort(l)
		fmt.Fprintf(w, "\nrunnable spells: %d, p50 %v, p90 %v, p99 %v, max %v\n", n, l[n/2], l[n*9/10], l[n*99/100], l[n-1])
		fmt.Fprintf(w, "runnable time: %v, of goroutines the writer woke (within 1ms of its last C call) %v\n", a.runnableTotal.Round(time.Millisecond), a.byWriter.Round(time.Millisecond))
	}
	var hist [5]int
	var long time.Duration
	var longHandoff, longSame int
	for _, g := range a.gaps {
		switch {
		case g.d < 10*time.Microsecond:
			hist[0]++
		case g.d < 50*time.Microsecond:
			hist[1]++
		case g.d < 200*time.Microsecond:
			hist[2]++
		case g.d < time.Millisecond:
			hist[3]++
		default:
			hist[4]++
		}
		if g.d >= 50*time.Microsecond {
			long += g.d
			if g.handoff {
				longHandoff++
			} else {
				longSame++
			}
		}
	}
	fmt.Fprintf(w, "\nthe writer's gaps between C calls, %v to %v: under 10µs %d, 10-50µs %d, 50-200µs %d, 0.2-1ms %d, 1ms and over %d\n", a.from, a.to, hist[0], hist[1], hist[2], hist[3], hist[4])
	fmt.Fprintf(w, "gaps of 50µs and over: %v in all (%.0f%% of the window), %d at a hand-off, %d of the same writer\n", long.Round(time.Microsecond), 100*float64(long)/float64(a.to-a.from), longHandoff, longSame)
	for _, l := range a.gapLines {
		fmt.Fprintln(w, "  "+l)
	}
}
