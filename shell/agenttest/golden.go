package agenttest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/stepwise-agent/stepwise/shell/agent"
)

// ExpectSuffix ends the name of a golden run's expectation file:
// NAME.expect.toml beside NAME.json.
const ExpectSuffix = ".expect.toml"

// Case is a golden run: a recording and what it must show.
type Case struct {
	Recording
	Expect Expect
	// ExpectFile is where Expect was read from; empty when the run has
	// none (it must then replay identically, and that is all).
	ExpectFile string
}

// LoadDir reads the golden runs in dir: every export file NAME.json (not
// in subdirectories), with its expectations from NAME.expect.toml when
// there is one, and the agent each names, loaded once. An expectation file
// without its run, one that does not parse, or an agent file that does not
// load is an error naming the file.
func LoadDir(dir string) ([]Case, error) {
	recs, err := FromDir(dir)
	if err != nil {
		return nil, err
	}
	runs := map[string]bool{}
	for _, r := range recs {
		runs[r.File] = true
	}
	expects, err := filepath.Glob(filepath.Join(dir, "*"+ExpectSuffix))
	if err != nil {
		return nil, err
	}
	for _, x := range expects {
		if run := strings.TrimSuffix(x, ExpectSuffix) + ".json"; !runs[run] {
			return nil, fmt.Errorf("%w: %s: there is no run %s beside it", ErrInvalidExpect, x, filepath.Base(run))
		}
	}
	agents := map[string]*agent.Spec{}
	cases := make([]Case, 0, len(recs))
	for _, r := range recs {
		c := Case{Recording: r}
		xf := strings.TrimSuffix(r.File, ".json") + ExpectSuffix
		if c.Expect, err = ReadExpect(xf); errors.Is(err, fs.ErrNotExist) {
			cases = append(cases, c)
			continue
		} else if err != nil {
			return nil, err
		}
		c.ExpectFile = xf
		if a := c.Expect.Agent; a != "" {
			if !filepath.IsAbs(a) {
				a = filepath.Join(filepath.Dir(xf), a)
			}
			if agents[a] == nil {
				spec, err := agent.Load(a)
				if err != nil {
					return nil, fmt.Errorf("%s: agent: %w", xf, err)
				}
				agents[a] = spec
			}
			c.Agent = agents[a]
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Outcome is a golden run, replayed and checked.
type Outcome struct {
	Result
	Expect     Expect
	ExpectFile string
	// Failures are the expectations the run does not meet, each naming
	// its assertion (see Expect.Failures).
	Failures []string
}

// Passed reports whether the run met every expectation.
func (o Outcome) Passed() bool { return len(o.Failures) == 0 }

// Check replays the cases (as Replay does) and checks each against its
// expectations; the outcomes are in the order given.
func Check(ctx context.Context, cases []Case, opts Options) []Outcome {
	recs := make([]Recording, len(cases))
	for i, c := range cases {
		recs[i] = c.Recording
	}
	results := Replay(ctx, recs, opts)
	out := make([]Outcome, len(cases))
	for i, r := range results {
		c := cases[i]
		out[i] = Outcome{Result: r, Expect: c.Expect, ExpectFile: c.ExpectFile, Failures: c.Expect.Failures(r)}
	}
	return out
}

// TB is the part of *testing.T that Run uses.
type TB interface {
	Helper()
	Context() context.Context
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Run replays the golden runs in dir from a Go test: each run that does not
// meet its expectations fails t with a message naming the run's file and
// the assertion. It returns the outcomes for further checks.
//
//	func TestGoldenRuns(t *testing.T) {
//		agenttest.Run(t, "testdata/runs")
//	}
func Run(t TB, dir string) []Outcome {
	t.Helper()
	cases, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("golden runs: %v", err)
	}
	if len(cases) == 0 {
		t.Fatalf("golden runs: no recorded runs (*.json) in %s", dir)
	}
	out := Check(t.Context(), cases, Options{})
	for _, o := range out {
		for _, f := range o.Failures {
			t.Errorf("%s: %s", o.Name, f)
		}
	}
	return out
}
