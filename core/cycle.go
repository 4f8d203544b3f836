package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Cycles configures cycle detection beyond Limits.MaxRepeats (which stops
// the same call made again and again). Two things are detected:
//
//   - A cycle: the calls accepted so far end with a block of p calls
//     (2 <= p <= MaxPeriod, not all the same call) seen Repeats times in a
//     row. With the defaults, A, B, A, B is a cycle, detected at the second
//     B; so is A, B, C, A, B, C (at the second C). It is checked for every
//     call of a reply, in order, before any of them runs.
//   - No progress: NoProgress calls in a row each returned exactly what an
//     identical earlier call (same tool, same arguments) returned, among the
//     last calls remembered. It is checked when a turn's results are in.
//
// The policy for both: the first detection tells the model (a cycle's calls
// are not run; no progress is said after the results), and the next
// detection of either kind fails the run with FailCycle.
type Cycles struct {
	// MaxPeriod is the longest cycle looked for, in calls (0: 4, at most 16).
	MaxPeriod int `json:"max_period,omitempty"`
	// Repeats is how many times in a row a cycle must be seen (0: 2, at
	// least 2, at most 8).
	Repeats int `json:"repeats,omitempty"`
	// NoProgress is how many calls in a row that learn nothing new count as
	// no progress (0: not checked).
	NoProgress int `json:"no_progress,omitempty"`
}

// Bounds of the cycle settings.
const (
	DefaultCyclePeriod  = 4
	DefaultCycleRepeats = 2
	maxCyclePeriod      = 16
	maxCycleRepeats     = 8
	// minCallLog is how many calls and outcomes a CallLog keeps at least.
	minCallLog = 32
)

// CallLog remembers a run's recent calls, oldest first, bounded.
type CallLog struct {
	// Calls are the accepted calls: each is the tool's name, a space, and
	// the fingerprint of the name and arguments.
	Calls []string `cbor:"1,keyasint,omitempty"`
	// Outcomes fingerprint each answered call with its result.
	Outcomes []string `cbor:"2,keyasint,omitempty"`
	// Stale counts the calls in a row whose outcome was in Outcomes already.
	Stale int `cbor:"3,keyasint,omitempty"`
	// Warned is set once the model has been told it goes round in circles.
	Warned bool `cbor:"4,keyasint,omitempty"`
}

func (c Cycles) period() int { return min(pick(c.MaxPeriod, DefaultCyclePeriod), maxCyclePeriod) }
func (c Cycles) repeats() int {
	return min(max(pick(c.Repeats, DefaultCycleRepeats), 2), maxCycleRepeats)
}

func (c Cycles) errors() []string {
	var errs []string
	if c.MaxPeriod < 0 || c.MaxPeriod == 1 || c.MaxPeriod > maxCyclePeriod {
		errs = append(errs, fmt.Sprintf("cycles.max_period %d is not between 2 and %d", c.MaxPeriod, maxCyclePeriod))
	}
	if c.Repeats < 0 || c.Repeats == 1 || c.Repeats > maxCycleRepeats {
		errs = append(errs, fmt.Sprintf("cycles.repeats %d is not between 2 and %d", c.Repeats, maxCycleRepeats))
	}
	if c.NoProgress < 0 {
		errs = append(errs, "cycles.no_progress is negative")
	}
	return errs
}

// keepsLog reports whether runs of cfg keep a CallLog.
func (c Config) keepsLog() bool { return c.Cycles != nil || c.Collaboration != nil }

// logSize is how many calls and outcomes the log keeps: enough for the
// longest cycle the agent looks for.
func (c Config) logSize() int {
	if c.Cycles == nil {
		return minCallLog
	}
	return max(minCallLog, c.Cycles.period()*c.Cycles.repeats())
}

func logEntry(c ToolCall) string { return c.Name + " " + fingerprint(c) }

// CyclePeriod returns the shortest period p (2 <= p <= maxPeriod) such that
// seq ends with a block of p entries, not all equal, seen repeats times in
// a row; 0 when there is none.
func CyclePeriod(seq []string, maxPeriod, repeats int) int {
	n := len(seq)
	for p := 2; p <= maxPeriod && p*repeats <= n; p++ {
		if constant(seq[n-p:]) {
			continue
		}
		periodic := true
		for i := n - p*repeats; i < n-p; i++ {
			if seq[i] != seq[i+p] {
				periodic = false
				break
			}
		}
		if periodic {
			return p
		}
	}
	return 0
}

func constant(block []string) bool {
	for _, s := range block[1:] {
		if s != block[0] {
			return false
		}
	}
	return true
}

// screenCycle checks a reply's valid calls, in order, for a cycle. On the
// first detection the calls are not run and the model is told; on a later
// one the run fails. ok is true when the calls may run.
func screenCycle(cfg Config, st State, msg Message, calls []ToolCall) (State, bool) {
	if cfg.Cycles == nil {
		return st, true
	}
	var seq []string
	if st.Recent != nil {
		seq = append(seq, st.Recent.Calls...)
	}
	for _, c := range calls {
		seq = append(seq, logEntry(c))
		p := CyclePeriod(seq, cfg.Cycles.period(), cfg.Cycles.repeats())
		if p == 0 {
			continue
		}
		cycle := cycleText(seq[len(seq)-p:])
		k := cfg.Cycles.repeats()
		if st.Recent != nil && st.Recent.Warned {
			return failed(st, FailCycle, fmt.Sprintf("the model went round a cycle of %d calls (%s) %d times in a row, after it had been told", p, cycle, k)), false
		}
		st = warned(st)
		return refuseCalls(st, msg, fmt.Sprintf("these calls were not run: your calls go round a cycle (%s), %d times in a row. "+
			"Going round again will not get you further: do something different, or give your final answer. "+
			"If your calls go round in circles again, the run will fail.", cycle, k)), false
	}
	return st, true
}

func cycleText(block []string) string {
	names := make([]string, len(block))
	for i, e := range block {
		names[i], _, _ = strings.Cut(e, " ")
	}
	return strings.Join(names, " → ")
}

// logCalls remembers a turn's accepted calls.
func logCalls(cfg Config, st State, calls []ToolCall) State {
	if !cfg.keepsLog() {
		return st
	}
	log := st.callLog()
	entries := make([]string, 0, len(log.Calls)+len(calls))
	entries = append(entries, log.Calls...)
	for _, c := range calls {
		entries = append(entries, logEntry(c))
	}
	log.Calls = entries[max(0, len(entries)-cfg.logSize()):]
	st.Recent = &log
	return st
}

// afterTurn remembers the outcomes of a finished turn and checks them for
// no progress.
func afterTurn(cfg Config, st State, turn *Turn) State {
	if cfg.Cycles == nil {
		return st
	}
	log := st.callLog()
	outcomes := append([]string(nil), log.Outcomes...)
	for i, c := range turn.Calls {
		o := outcome(c, turn.Results[i])
		if containsString(outcomes, o) {
			log.Stale++
		} else {
			log.Stale = 0
		}
		outcomes = append(outcomes, o)
	}
	log.Outcomes = outcomes[max(0, len(outcomes)-cfg.logSize()):]
	st.Recent = &log
	n := cfg.Cycles.NoProgress
	if n <= 0 || log.Stale < n {
		return st
	}
	if log.Warned {
		return failed(st, FailCycle, fmt.Sprintf("the model's last %d calls each returned what an identical earlier call had returned, after it had been told", log.Stale))
	}
	log.Stale = 0
	st = warned(st)
	return appendMessages(st, Message{Role: RoleUser, Content: fmt.Sprintf("Your last %d calls each returned exactly what an identical earlier call returned: "+
		"nothing new was learned. Do something different, or give your final answer. "+
		"If your calls go round in circles again, the run will fail.", n)})
}

func (st State) callLog() CallLog {
	if st.Recent == nil {
		return CallLog{}
	}
	return *st.Recent
}

func warned(st State) State {
	log := st.callLog()
	log.Warned = true
	st.Recent = &log
	return st
}

// outcome fingerprints a call with its result.
func outcome(c ToolCall, r ToolResult) string {
	h := sha256.New()
	h.Write([]byte(c.Name))
	h.Write([]byte{0})
	h.Write(c.Args)
	if r.Failed() {
		h.Write([]byte{0, 'E'})
		h.Write([]byte(r.Error))
	} else {
		h.Write([]byte{0, 'O'})
		h.Write([]byte(r.Output))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// refuseCalls answers a reply's calls without running them and tells the
// model why: native calls each get a tool message (every native call must
// be answered before the model speaks again), text calls a user message.
func refuseCalls(st State, msg Message, note string) State {
	if len(msg.Calls) == 0 {
		return appendMessages(st, Message{Role: RoleUser, Content: note})
	}
	out := make([]Message, len(msg.Calls))
	for i, c := range msg.Calls {
		out[i] = Message{Role: RoleTool, CallID: c.ID, Name: c.Name, Content: note, IsError: true}
	}
	return appendMessages(st, out...)
}
