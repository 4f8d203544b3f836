package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/shell/agenttest"
)

// corpusRun is one run of a corpus report (replay --all/--runs, test), as
// --json prints it.
type corpusRun struct {
	Name  string `json:"name"`
	RunID string `json:"run_id,omitempty"`
	Agent string `json:"agent,omitempty"`
	// Verdict is identical, diverged or error (replay); passed, failed or
	// error (test).
	Verdict    string          `json:"verdict"`
	Steps      int             `json:"steps"`
	Divergence *jsonDivergence `json:"divergence,omitempty"`
	Error      string          `json:"error,omitempty"`
	// Failures are the unmet expectations of a golden run (test).
	Failures  []string       `json:"failures,omitempty"`
	Continued *jsonContinued `json:"continued,omitempty"`
	elapsed   time.Duration
}

type jsonDivergence struct {
	Step     int    `json:"step"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Detail   string `json:"detail,omitempty"`
}

type jsonContinued struct {
	RunID  string `json:"run_id,omitempty"`
	Status string `json:"status,omitempty"`
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}

// corpusSummary counts a corpus report's runs by verdict.
type corpusSummary struct {
	Runs      int `json:"runs"`
	Identical int `json:"identical,omitempty"`
	Diverged  int `json:"diverged,omitempty"`
	Passed    int `json:"passed,omitempty"`
	Failed    int `json:"failed,omitempty"`
	Errors    int `json:"errors"`
	Skipped   int `json:"skipped,omitempty"`
	Continued int `json:"continued,omitempty"`
}

// corpusReport is a corpus replay or a golden test, ready to print.
type corpusReport struct {
	// Suite names it in JUnit ("stepwise replay", "stepwise test DIR").
	suite   string
	Runs    []corpusRun   `json:"runs"`
	Summary corpusSummary `json:"summary"`
}

// replayRun is a replay result as a report's run.
func replayRun(r agenttest.Result) corpusRun {
	c := corpusRun{Name: r.Name, RunID: r.RunID, Agent: r.Run.Agent, Verdict: string(r.Verdict), Steps: r.Steps, elapsed: r.Elapsed}
	if d := r.Divergence; d != nil {
		c.Divergence = &jsonDivergence{Step: d.Seq, Recorded: d.Recorded, Replayed: d.Replayed, Detail: d.Detail}
	}
	if r.Err != nil {
		c.Error = r.Err.Error()
	}
	if k := r.Continued; k != nil {
		c.Continued = &jsonContinued{RunID: k.RunID, Status: string(k.Status), Answer: k.Answer}
		if k.Err != nil {
			c.Continued.Error = k.Err.Error()
		}
	}
	return c
}

// add counts c in the summary and appends it.
func (rep *corpusReport) add(c corpusRun) {
	s := &rep.Summary
	s.Runs++
	switch c.Verdict {
	case string(agenttest.Identical):
		s.Identical++
	case string(agenttest.Diverged):
		s.Diverged++
	case "passed":
		s.Passed++
	case "failed":
		s.Failed++
	default:
		s.Errors++
	}
	if c.Continued != nil && c.Continued.RunID != "" {
		s.Continued++
	}
	rep.Runs = append(rep.Runs, c)
}

// exitCode is 1 when a run diverged or failed, else 8 when one could not
// be replayed, else 0.
func (rep *corpusReport) exitCode() int {
	switch s := rep.Summary; {
	case s.Diverged > 0 || s.Failed > 0:
		return exitFailed
	case s.Errors > 0:
		return exitUnreplayable
	}
	return 0
}

// write prints the report as text or JSON.
func (rep *corpusReport) write(w io.Writer, asJSON bool) {
	if asJSON {
		if rep.Runs == nil {
			rep.Runs = []corpusRun{}
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(rep)
		return
	}
	for _, c := range rep.Runs {
		name := c.Name
		if c.RunID != "" && c.RunID != c.Name {
			name += " (run " + c.RunID + ")"
		}
		switch {
		case c.Divergence != nil && c.Verdict == string(agenttest.Diverged):
			fmt.Fprintf(w, "%-9s %s: %s, at step %d\n", c.Verdict, name, c.Agent, c.Divergence.Step)
			writeDivergence(w, c.Divergence)
		case c.Error != "":
			fmt.Fprintf(w, "%-9s %s: could not replay: %s\n", c.Verdict, name, c.Error)
		default:
			fmt.Fprintf(w, "%-9s %s: %s, %s\n", c.Verdict, name, c.Agent, plural(c.Steps, "step"))
		}
		for _, f := range c.Failures {
			if c.Error == "" {
				fmt.Fprintf(w, "  %s\n", indentLines(f))
			}
		}
		if k := c.Continued; k != nil {
			if k.Error != "" && k.RunID == "" {
				fmt.Fprintf(w, "  could not continue: %s\n", k.Error)
			} else {
				fmt.Fprintf(w, "  continued as %s (%s)", k.RunID, k.Status)
				if k.Answer != "" {
					fmt.Fprintf(w, ": %q", oneLine(k.Answer))
				}
				if k.Error != "" {
					fmt.Fprintf(w, ": %s", k.Error)
				}
				fmt.Fprintln(w)
			}
		}
	}
	s := rep.Summary
	var parts []string
	count := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	count(s.Identical, "identical")
	count(s.Diverged, "diverged")
	count(s.Passed, "passed")
	count(s.Failed, "failed")
	count(s.Errors, "could not be replayed")
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	fmt.Fprintf(w, "%d runs: %s", s.Runs, strings.Join(parts, ", "))
	if s.Continued > 0 {
		fmt.Fprintf(w, "; %d continued", s.Continued)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "; %d skipped by the filter", s.Skipped)
	}
	fmt.Fprintln(w)
}

func writeDivergence(w io.Writer, d *jsonDivergence) {
	fmt.Fprintf(w, "  recorded: %s\n  replayed: %s\n", d.Recorded, d.Replayed)
	if d.Detail != "" {
		fmt.Fprintf(w, "  %s\n", indentLines(d.Detail))
	}
}

func indentLines(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// JUnit XML, as CI systems read it: one testsuite, one testcase per run, a
// failure for a divergence or an unmet expectation, an error for a run that
// could not be replayed.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// writeJUnit writes the report as JUnit XML to path.
func (rep *corpusReport) writeJUnit(path string, total time.Duration) error {
	suite := junitSuite{Name: rep.suite, Time: seconds(total)}
	for _, c := range rep.Runs {
		jc := junitCase{Name: c.Name, Classname: "stepwise." + c.Agent, Time: seconds(c.elapsed)}
		if c.Agent == "" {
			jc.Classname = "stepwise"
		}
		switch {
		case c.Error != "":
			jc.Error = &junitProblem{Message: "could not replay: " + firstLine(c.Error), Type: "error", Text: c.Error}
			suite.Errors++
		case c.Verdict == string(agenttest.Diverged):
			d := c.Divergence
			var b strings.Builder
			writeDivergence(&b, d)
			jc.Failure = &junitProblem{Message: fmt.Sprintf("diverged at step %d", d.Step), Type: "diverged", Text: b.String()}
			suite.Failures++
		case len(c.Failures) > 0:
			jc.Failure = &junitProblem{Message: firstLine(c.Failures[0]), Type: "expectation", Text: strings.Join(c.Failures, "\n")}
			suite.Failures++
		}
		if k := c.Continued; k != nil {
			if k.RunID != "" {
				jc.SystemOut = fmt.Sprintf("continued as %s (%s)", k.RunID, k.Status)
			}
			if k.Error != "" {
				jc.SystemOut = strings.TrimSpace(jc.SystemOut + "\ncould not continue: " + k.Error)
			}
		}
		suite.Cases = append(suite.Cases, jc)
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: rep.suite, Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(out, '\n')...), 0o644)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
