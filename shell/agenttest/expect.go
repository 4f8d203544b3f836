package agenttest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/stepwise-agent/stepwise/shell/internal/tomlerr"
	"github.com/stepwise-agent/stepwise/store"
)

// ErrInvalidExpect wraps every error about an expectation file's content.
var ErrInvalidExpect = errors.New("invalid expectation")

// Expect is what a golden run must show: the contents of its
// NAME.expect.toml (see the package documentation). A key left out asserts
// nothing, except that without diverges_at the replay must be identical.
type Expect struct {
	// Agent is the agent file to replay the run against, relative to the
	// expectation file; empty: the agent the run recorded.
	Agent string `toml:"agent"`
	// DivergesAt, when set, is the step the replay must diverge at (a
	// recording kept to show that a change is caught).
	DivergesAt *int `toml:"diverges_at"`
	// Status is the run's final status.
	Status store.Status `toml:"status"`
	// NoFailure asserts that the run neither failed nor was cancelled.
	NoFailure bool `toml:"no_failure"`
	// Answer is the final answer, exactly.
	Answer *string `toml:"answer"`
	// AnswerContains are texts the final answer contains.
	AnswerContains []string `toml:"answer_contains"`
	// ToolsUsed are the tools the run used, exactly and in order (the
	// state's tools_used); [] asserts that it used none.
	ToolsUsed *[]string `toml:"tools_used"`
	// MaxSteps bounds the run's steps (its last step's number).
	MaxSteps *int `toml:"max_steps"`
}

// ReadExpect reads and checks an expectation file. Errors name the file,
// and the line of the key at fault.
func ReadExpect(path string) (Expect, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Expect{}, err
	}
	return ParseExpect(data, path)
}

// ParseExpect parses expectation file text; name is used in messages.
func ParseExpect(data []byte, name string) (Expect, error) {
	var x Expect
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&x); err != nil {
		return Expect{}, tomlerr.Wrap(ErrInvalidExpect, name, err)
	}
	switch {
	case x.Status != "" && !x.Status.Valid():
		return Expect{}, fmt.Errorf("%w: %s: status %q is not a run status", ErrInvalidExpect, name, x.Status)
	case x.DivergesAt != nil && *x.DivergesAt < 0:
		return Expect{}, fmt.Errorf("%w: %s: diverges_at %d is negative", ErrInvalidExpect, name, *x.DivergesAt)
	case x.MaxSteps != nil && *x.MaxSteps < 0:
		return Expect{}, fmt.Errorf("%w: %s: max_steps %d is negative", ErrInvalidExpect, name, *x.MaxSteps)
	}
	return x, nil
}

// Failures checks r against x and returns the expectations it does not
// meet, each naming its assertion (nil when it meets them all). An
// Unreplayable result meets none: its failure is why.
func (x Expect) Failures(r Result) []string {
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	switch {
	case r.Verdict == Unreplayable:
		return []string{"could not replay: " + errText(r.Err)}
	case x.DivergesAt == nil && r.Verdict == Diverged:
		d := r.Divergence
		fail("replay: diverged at step %d\n  recorded: %s\n  replayed: %s%s", d.Seq, d.Recorded, d.Replayed, detail(d.Detail))
	case x.DivergesAt != nil && r.Verdict == Identical:
		fail("diverges_at = %d: the replay is identical", *x.DivergesAt)
	case x.DivergesAt != nil && r.Divergence.Seq != *x.DivergesAt:
		d := r.Divergence
		fail("diverges_at = %d: the replay diverged at step %d\n  recorded: %s\n  replayed: %s%s", *x.DivergesAt, d.Seq, d.Recorded, d.Replayed, detail(d.Detail))
	}
	run := r.Run
	if x.Status != "" && run.Status != x.Status {
		fail("status = %q: the run is %s%s", x.Status, run.Status, why(run))
	}
	if x.NoFailure && (run.Status == store.StatusFailed || run.Status == store.StatusCancelled) {
		fail("no_failure: the run is %s%s", run.Status, why(run))
	}
	if x.Answer != nil && run.Answer != *x.Answer {
		fail("answer = %q: the answer is %q", *x.Answer, run.Answer)
	}
	for _, s := range x.AnswerContains {
		if !strings.Contains(run.Answer, s) {
			fail("answer_contains %q: the answer is %q", s, run.Answer)
		}
	}
	if x.ToolsUsed != nil {
		if r.ToolsUsed == nil {
			fail("tools_used = %s: the tools used are known only for runs read from files", list(*x.ToolsUsed))
		} else if !slices.Equal(r.ToolsUsed, *x.ToolsUsed) {
			fail("tools_used = %s: the run used %s", list(*x.ToolsUsed), list(r.ToolsUsed))
		}
	}
	if x.MaxSteps != nil && run.LastSeq > *x.MaxSteps {
		fail("max_steps = %d: the run took %d steps", *x.MaxSteps, run.LastSeq)
	}
	return out
}

func why(r store.RunInfo) string {
	if r.FailCode == "" && r.Reason == "" {
		return ""
	}
	return fmt.Sprintf(" (%s: %s)", r.FailCode, r.Reason)
}

func detail(d string) string {
	if d == "" {
		return ""
	}
	return "\n  " + strings.ReplaceAll(d, "\n", "\n  ")
}

func list(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
