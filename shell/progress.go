package shell

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// ToolProgress is how far a running call has got, as its tool reports it
// (an MCP server's notifications/progress, for example). It is shown, never
// stored: a run's record holds only the call's result.
type ToolProgress struct {
	// Progress grows with every report; Total is where it ends, 0 when
	// the tool does not know.
	Progress, Total float64
	// Message says what the tool is doing, if it says.
	Message string
}

// String renders p as "40% — message", or "3 — message" without a total.
func (p ToolProgress) String() string {
	var s string
	if p.Total > 0 {
		s = strconv.Itoa(int(math.Round(100*p.Progress/p.Total))) + "%"
	} else {
		s = strconv.FormatFloat(p.Progress, 'f', -1, 64)
	}
	if p.Message != "" {
		s += " — " + p.Message
	}
	return s
}

// Report passes p to rc.Progress, when it is set.
func (rc RunContext) Report(p ToolProgress) {
	if rc.Progress != nil {
		rc.Progress(p)
	}
}

// progressFor is the RunContext.Progress of call c: each report becomes a
// "progress" Event ("tool NAME: 40% — message", its message redacted), or
// nil when nobody observes the run.
func (r *Runner) progressFor(ag *Agent, cur *cursor, c core.ToolCall) func(ToolProgress) {
	if r.opts.Observer == nil {
		return nil
	}
	id, seq := cur.id, cur.seq
	x := NewRedactor(ag.Secrets)
	start := time.Now()
	return func(p ToolProgress) {
		p.Message = x.String(strings.ToValidUTF8(p.Message, "\uFFFD"))
		r.emit(func() Event {
			return Event{RunID: id, Seq: seq, Kind: "progress", Text: fmt.Sprintf("tool %s: %s", c.Name, p), Duration: time.Since(start), Progress: &p}
		})
	}
}
