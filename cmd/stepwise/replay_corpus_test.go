package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inProcess runs the CLI in this process through its env.
func inProcess(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}}
	code := e.main(args)
	return result{code, out.String(), errb.String()}
}

// calcCorpus is a corpus of recorded runs of a calculator agent whose div
// tool fails on a zero divisor: two runs answer at once, two divide and
// answer, two divide by zero and answer. A changed agent that prefixes tool
// errors ("error: ") changes the zero runs only, at step 3.
type calcCorpus struct {
	dir, db, runs           string
	agent, prefixed, prompt string
	direct, ok, zero        []string
}

func newCalcCorpus(t *testing.T) *calcCorpus {
	t.Helper()
	dir := t.TempDir()
	c := &calcCorpus{dir: dir, db: filepath.Join(dir, "runs.db"), runs: filepath.Join(dir, "runs"),
		agent: filepath.Join(dir, "calc.toml"), prefixed: filepath.Join(dir, "calc-prefixed.toml"), prompt: filepath.Join(dir, "calc-prompt.toml")}
	agentText := `name = "calc"
system_prompt = "You compute with the tools."
format = "native"

[models.primary]
provider = "script"
script = "direct.jsonl"

[[tools]]
name = "div"
description = "Divide two integers."
command = ["expr", "{{a}}", "/", "{{b}}"]
idempotent = true
parameters = '''{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false}'''
`
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("calc.toml", agentText)
	write("calc-prefixed.toml", agentText+"\n[policy]\nerror_prefix = \"error: \"\n")
	write("calc-prompt.toml", strings.Replace(agentText, "with the tools", "carefully", 1))
	write("direct.jsonl", `{"text": "I know: 4"}`+"\n")
	write("ok.jsonl", `{"tool_calls": [{"id": "d1", "name": "div", "arguments": {"a": 8, "b": 2}}]}`+"\n"+`{"text": "8 / 2 = 4"}`+"\n")
	write("zero.jsonl", `{"tool_calls": [{"id": "d1", "name": "div", "arguments": {"a": 8, "b": 0}}]}`+"\n"+`{"text": "cannot"}`+"\n")
	write("cont.jsonl", `{"text": "division by zero is undefined"}`+"\n")
	os.Mkdir(c.runs, 0o755)
	for i := range 6 {
		script := []string{"direct", "ok", "zero"}[i%3]
		r := inProcess(t, "run", c.agent, fmt.Sprintf("question %d", i), "--script", filepath.Join(dir, script+".jsonl"), "--db", c.db, "--json")
		want(t, r, 0, "run", script)
		id := decodeOutcome(t, r).RunID
		switch script {
		case "direct":
			c.direct = append(c.direct, id)
		case "ok":
			c.ok = append(c.ok, id)
		default:
			c.zero = append(c.zero, id)
		}
		want(t, inProcess(t, "export", id, "-o", filepath.Join(c.runs, id+".json"), "--db", c.db), 0, "export")
	}
	return c
}

// corpusJSON is replay --all/--runs --json.
type corpusJSON struct {
	Runs []struct {
		Name       string `json:"name"`
		RunID      string `json:"run_id"`
		Agent      string `json:"agent"`
		Verdict    string `json:"verdict"`
		Steps      int    `json:"steps"`
		Error      string `json:"error"`
		Divergence *struct {
			Step     int    `json:"step"`
			Recorded string `json:"recorded"`
			Replayed string `json:"replayed"`
		} `json:"divergence"`
		Continued *struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
			Answer string `json:"answer"`
			Error  string `json:"error"`
		} `json:"continued"`
	} `json:"runs"`
	Summary struct {
		Runs, Identical, Diverged, Errors, Skipped, Continued int
	} `json:"summary"`
}

func decodeCorpus(t *testing.T, r result) corpusJSON {
	t.Helper()
	var c corpusJSON
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	return c
}

// checkVerdicts checks that the zero runs diverged at step 3 and the others
// are identical.
func (c *calcCorpus) checkVerdicts(t *testing.T, rep corpusJSON) {
	t.Helper()
	if len(rep.Runs) != 6 || rep.Summary.Runs != 6 || rep.Summary.Identical != 4 || rep.Summary.Diverged != 2 {
		t.Fatalf("report = %+v", rep)
	}
	for _, r := range rep.Runs {
		zero := strings.Contains(strings.Join(c.zero, " "), r.RunID)
		switch {
		case zero && (r.Verdict != "diverged" || r.Divergence == nil || r.Divergence.Step != 3 ||
			!strings.Contains(r.Divergence.Recorded, `error: "div: expr exited`) || !strings.Contains(r.Divergence.Replayed, `error: "error: div: expr exited`)):
			t.Errorf("zero run %s: %+v %+v", r.RunID, r, r.Divergence)
		case !zero && r.Verdict != "identical":
			t.Errorf("run %s: %s, want identical", r.RunID, r.Verdict)
		}
		if r.Agent != "calc" {
			t.Errorf("run %s: agent %q", r.RunID, r.Agent)
		}
	}
}

type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"error"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Fatalf("no XML declaration: %.80s", data)
	}
	var doc junitDoc
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, data)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d test suites", len(doc.Suites))
	}
	return doc
}

func TestReplayCorpusAgainstAChangedAgent(t *testing.T) {
	c := newCalcCorpus(t)
	// From the database.
	r := inProcess(t, "replay", "--all", "--agent", c.prefixed, "--db", c.db, "--json")
	want(t, r, exitFailed, "replay --all")
	c.checkVerdicts(t, decodeCorpus(t, r))
	r = inProcess(t, "replay", "--all", "--agent", c.prefixed, "--db", c.db, "--parallel", "1")
	want(t, r, exitFailed, "replay --all")
	for _, s := range []string{
		"diverged  " + c.zero[0] + ": calc, at step 3\n  recorded: model primary messages=4 tools=1 last=tool(d1) error: \"div: expr",
		"  replayed: model primary messages=4 tools=1 last=tool(d1) error: \"error: div: expr",
		"identical " + c.direct[0] + ": calc, 2 steps\n",
		"identical " + c.ok[1] + ": calc, 4 steps\n",
		"6 runs: 4 identical, 2 diverged\n",
	} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("text report lacks %q:\n%s", s, r.stdout)
		}
	}
	// From the exported files, with no database, and as JUnit XML.
	junit := filepath.Join(c.dir, "junit.xml")
	r = inProcess(t, "replay", "--runs", c.runs, "--agent", c.prefixed, "--json", "--junit", junit, "--db", filepath.Join(c.dir, "absent.db"))
	want(t, r, exitFailed, "replay --runs")
	c.checkVerdicts(t, decodeCorpus(t, r))
	if _, err := os.Stat(filepath.Join(c.dir, "absent.db")); err == nil {
		t.Fatal("replay --runs created a database")
	}
	doc := readJUnit(t, junit)
	s := doc.Suites[0]
	if doc.Tests != 6 || doc.Failures != 2 || doc.Errors != 0 || s.Tests != 6 || s.Failures != 2 || s.Name != "stepwise replay" || len(s.Cases) != 6 {
		t.Fatalf("junit = %+v", doc)
	}
	for _, tc := range s.Cases {
		zero := strings.Contains(tc.Name, c.zero[0]) || strings.Contains(tc.Name, c.zero[1])
		if !strings.HasPrefix(tc.Name, c.runs) || tc.Classname != "stepwise.calc" || tc.Error != nil || tc.Time == "" {
			t.Errorf("testcase %+v", tc)
		}
		if zero != (tc.Failure != nil) {
			t.Errorf("testcase %s: failure %+v", tc.Name, tc.Failure)
		}
		if zero && (tc.Failure.Message != "diverged at step 3" || tc.Failure.Type != "diverged" ||
			!strings.Contains(tc.Failure.Text, "recorded: model primary") || !strings.Contains(tc.Failure.Text, `replayed: model primary messages=4 tools=1 last=tool(d1) error: "error: div`)) {
			t.Errorf("failure %+v", tc.Failure)
		}
	}
	// Against the agent they recorded, every run is identical.
	r = inProcess(t, "replay", "--runs", c.runs)
	want(t, r, 0, "replay --runs (recorded agents)")
	if !strings.HasSuffix(r.stdout, "6 runs: 6 identical\n") {
		t.Errorf("report:\n%s", r.stdout)
	}
	// A file that does not read is reported, and the rest still replayed:
	// exit 8 when nothing diverged, 1 when something did.
	os.WriteFile(filepath.Join(c.runs, "broken.json"), []byte(`{"format": "stepwise-run", "version": 1}`), 0o644)
	r = inProcess(t, "replay", "--runs", c.runs, "--junit", junit)
	want(t, r, exitUnreplayable, "replay --runs with a broken file")
	if !strings.Contains(r.stdout, "error     "+filepath.Join(c.runs, "broken.json")+": could not replay: ") || !strings.HasSuffix(r.stdout, "7 runs: 6 identical, 1 could not be replayed\n") {
		t.Errorf("report:\n%s", r.stdout)
	}
	doc = readJUnit(t, junit)
	if doc.Errors != 1 || doc.Failures != 0 || doc.Tests != 7 || doc.Suites[0].Cases[0].Error == nil || !strings.HasPrefix(doc.Suites[0].Cases[0].Error.Message, "could not replay: ") {
		t.Fatalf("junit = %+v", doc)
	}
	want(t, inProcess(t, "replay", "--runs", c.runs, "--agent", c.prefixed), exitFailed, "diverged and broken")
	os.Remove(filepath.Join(c.runs, "broken.json"))

	// Single runs replay as before.
	want(t, inProcess(t, "replay", c.ok[0], "--agent", c.prefixed, "--db", c.db), 0, "replay ok")
	r = inProcess(t, "replay", c.zero[0], "--agent", c.prefixed, "--db", c.db)
	want(t, r, exitFailed, "replay zero")
	if !strings.HasPrefix(r.stdout, "run "+c.zero[0]+" diverges at step 3:\n") {
		t.Errorf("single replay:\n%s", r.stdout)
	}
}

func TestReplayCorpusFiltersAndUsage(t *testing.T) {
	c := newCalcCorpus(t)
	r := inProcess(t, "replay", "--all", "--db", c.db, "--filter", "status=failed", "--json")
	want(t, r, 0, "no failed runs")
	if rep := decodeCorpus(t, r); rep.Summary.Runs != 0 || len(rep.Runs) != 0 || !strings.Contains(r.stderr, "no runs selected") {
		t.Fatalf("report %+v, stderr %q", rep, r.stderr)
	}
	r = inProcess(t, "replay", "--all", "--db", c.db, "--filter", "status=completed,agent=calc", "--filter", "since=1h", "--json")
	want(t, r, 0, "filtered")
	if rep := decodeCorpus(t, r); rep.Summary.Runs != 6 {
		t.Fatalf("report %+v", rep)
	}
	for _, f := range []string{"since=2099-01-01", "agent=other"} {
		if rep := decodeCorpus(t, inProcess(t, "replay", "--all", "--db", c.db, "--filter", f, "--json")); rep.Summary.Runs != 0 {
			t.Errorf("--filter %s: %+v", f, rep)
		}
	}
	// From files, the filter's leftovers are counted as skipped; --agent
	// selects the runs of its agent's name.
	for _, f := range []string{"agent=other", "since=2099-01-01", "status=failed"} {
		r = inProcess(t, "replay", "--runs", c.runs, "--filter", f, "--json")
		if rep := decodeCorpus(t, r); rep.Summary.Runs != 0 || rep.Summary.Skipped != 6 {
			t.Fatalf("--filter %s: report %+v", f, rep)
		}
	}
	renamed := filepath.Join(c.dir, "renamed.toml")
	text, _ := os.ReadFile(c.agent)
	os.WriteFile(renamed, bytes.Replace(text, []byte(`name = "calc"`), []byte(`name = "calc2"`), 1), 0o644)
	if r := inProcess(t, "replay", "--runs", c.runs, "--agent", renamed); r.code != 0 || !strings.HasSuffix(r.stdout, "0 runs: none; 6 skipped by the filter\n") {
		t.Fatalf("%+v", r)
	}
	if r := inProcess(t, "replay", "--runs", c.runs, "--agent", renamed, "--filter", "agent=calc"); r.code != 0 || !strings.HasSuffix(r.stdout, "6 runs: 6 identical\n") {
		t.Fatalf("%+v", r)
	}
	for _, args := range [][]string{
		{"replay", "--all", c.ok[0], "--db", c.db},
		{"replay", "--all", "--runs", c.runs, "--db", c.db},
		{"replay", c.ok[0], "--junit", "x.xml", "--db", c.db},
		{"replay", c.ok[0], "--continue", "--db", c.db},
		{"replay", "--all", "--filter", "state=done", "--db", c.db},
		{"replay", "--all", "--filter", "status=done", "--db", c.db},
		{"replay", "--all", "--filter", "since=yesterday", "--db", c.db},
		{"replay", "--all", "--parallel", "-1", "--db", c.db},
		{"replay", "--all", "--script", filepath.Join(c.dir, "cont.jsonl"), "--db", c.db},
		{"replay", "--all", "--db", filepath.Join(c.dir, "none.db")},
		{"replay", "--runs", filepath.Join(c.dir, "nowhere")},
		{"replay"},
	} {
		r := inProcess(t, args...)
		want(t, r, exitUsage, args...)
		if r.stderr == "" {
			t.Errorf("%v: no message", args)
		}
	}
}

// --continue forks each diverged run at its divergence and runs it on with
// the changed agent: from files into a new database (the originals
// imported), and from the database itself.
func TestReplayContinue(t *testing.T) {
	c := newCalcCorpus(t)
	cont := filepath.Join(c.dir, "cont.jsonl")
	newDB := filepath.Join(c.dir, "new.db")
	junit := filepath.Join(c.dir, "junit.xml")
	r := inProcess(t, "replay", "--runs", c.runs, "--agent", c.prefixed, "--continue", "--script", cont, "--db", newDB, "--json", "--junit", junit)
	want(t, r, exitFailed, "replay --runs --continue")
	rep := decodeCorpus(t, r)
	c.checkVerdicts(t, rep)
	if rep.Summary.Continued != 2 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	continued := map[string]string{}
	for _, run := range rep.Runs {
		if run.Verdict != "diverged" {
			if run.Continued != nil {
				t.Errorf("identical run %s continued", run.RunID)
			}
			continue
		}
		k := run.Continued
		if k == nil || k.RunID == "" || k.Status != "completed" || k.Answer != "division by zero is undefined" || k.Error != "" {
			t.Fatalf("continued %+v", k)
		}
		continued[k.RunID] = run.RunID
	}
	ls := inProcess(t, "ls", "--db", newDB, "--json")
	want(t, ls, 0, "ls")
	var listed struct {
		Runs []jsonRun `json:"runs"`
	}
	json.Unmarshal([]byte(ls.stdout), &listed)
	if len(listed.Runs) != 4 {
		t.Fatalf("the new database holds %d runs, want the 2 originals and their continuations:\n%s", len(listed.Runs), ls.stdout)
	}
	for _, run := range listed.Runs {
		if orig, ok := continued[run.ID]; ok {
			if run.ParentID != orig || run.ParentStep != 2 || run.Status != "completed" {
				t.Errorf("continuation %+v, want a fork of %s at step 2", run, orig)
			}
			// The continuation is what the changed agent does: it replays
			// identically against it.
			want(t, inProcess(t, "replay", run.ID, "--agent", c.prefixed, "--db", newDB), 0, "replay the continuation")
		}
	}
	for _, tc := range readJUnit(t, junit).Suites[0].Cases {
		if tc.Failure != nil && !strings.HasPrefix(tc.SystemOut, "continued as r") {
			t.Errorf("testcase %s: system-out %q", tc.Name, tc.SystemOut)
		}
	}

	// From the database: a new prompt diverges every run at step 1, and
	// each continues from the new agent's first state.
	r = inProcess(t, "replay", "--all", "--agent", c.prompt, "--continue", "--script", cont, "--db", c.db)
	want(t, r, exitFailed, "replay --all --continue")
	if n := strings.Count(r.stdout, "  continued as r"); n != 6 || !strings.Contains(r.stdout, `(completed): "division by zero is undefined"`) ||
		!strings.HasSuffix(r.stdout, "6 runs: 6 diverged; 6 continued\n") {
		t.Fatalf("report:\n%s", r.stdout)
	}
	ls = inProcess(t, "ls", "--db", c.db, "--json")
	listed.Runs = nil
	json.Unmarshal([]byte(ls.stdout), &listed)
	forks := 0
	for _, run := range listed.Runs {
		if run.ParentID != "" {
			forks++
			if run.ParentStep != 0 || run.Status != "completed" {
				t.Errorf("continuation %+v", run)
			}
			show := inProcess(t, "show", run.ID, "--step", "0", "--db", c.db)
			if !strings.Contains(show.stdout, "You compute carefully.") {
				t.Errorf("continuation %s does not start from the new prompt:\n%s", run.ID, show.stdout)
			}
		}
	}
	if forks != 6 {
		t.Fatalf("%d continuations", forks)
	}
}
