package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stepwise test on the project's golden runs passes: the good recordings
// against the agent files they name, the bad ones caught at their step.
func TestGoldenRunsPass(t *testing.T) {
	r := inProcess(t, "test", "../../testdata/runs")
	want(t, r, 0, "test testdata/runs")
	files, _ := filepath.Glob("../../testdata/runs/*.json")
	if n := len(files); n < 6 || !strings.HasSuffix(r.stdout, fmt.Sprintf("%d runs: %d passed\n", n, n)) || !strings.Contains(r.stdout, "passed    ../../testdata/runs/bad-prompt.json (run bad-prompt): analyst, 8 steps\n") {
		t.Fatalf("report:\n%s", r.stdout)
	}
}

func TestGoldenRunsFailAndError(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../testdata/runs/multi-tool.json")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "multi-tool.json")
	os.WriteFile(run, data, 0o644)
	expect := filepath.Join(dir, "multi-tool.expect.toml")
	os.WriteFile(expect, []byte("answer_contains = [\"108 EUR\"]\ntools_used = []\n"), 0o644)
	junit := filepath.Join(dir, "junit.xml")
	r := inProcess(t, "test", dir, "--junit", junit)
	want(t, r, exitFailed, "test")
	for _, s := range []string{
		"failed    " + run + " (run r20261121-204701-7bci76j5v4): analyst, 8 steps\n",
		`  answer_contains "108 EUR": the answer is "The desk lamp and the monitor arm cost about 107 EUR together."` + "\n",
		`  tools_used = []: the run used ["list_files", "read_file", "add"]` + "\n",
		"1 runs: 1 failed\n",
	} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("report lacks %q:\n%s", s, r.stdout)
		}
	}
	doc := readJUnit(t, junit)
	tc := doc.Suites[0].Cases[0]
	if doc.Failures != 1 || doc.Suites[0].Name != "stepwise test "+dir || tc.Name != run || tc.Failure == nil || tc.Failure.Type != "expectation" ||
		!strings.HasPrefix(tc.Failure.Message, `answer_contains "108 EUR"`) || !strings.Contains(tc.Failure.Text, "tools_used = []") {
		t.Fatalf("junit = %+v", doc)
	}
	r = inProcess(t, "test", dir, "--json")
	var rep struct {
		Runs []struct {
			Verdict  string   `json:"verdict"`
			Failures []string `json:"failures"`
		} `json:"runs"`
		Summary struct{ Runs, Failed int } `json:"summary"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Summary.Failed != 1 || rep.Runs[0].Verdict != "failed" || len(rep.Runs[0].Failures) != 2 {
		t.Fatalf("--json %s: %v", r.stdout, err)
	}
	// A run that cannot be replayed is an error, not a failure: exit 8.
	os.WriteFile(expect, []byte("status = \"completed\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{}"), 0o644)
	r = inProcess(t, "test", dir, "--junit", junit)
	want(t, r, exitUnreplayable, "test with a broken run")
	if !strings.Contains(r.stdout, "error     "+filepath.Join(dir, "broken.json")+": could not replay: ") || !strings.HasSuffix(r.stdout, "2 runs: 1 passed, 1 could not be replayed\n") {
		t.Fatalf("report:\n%s", r.stdout)
	}
	if doc := readJUnit(t, junit); doc.Errors != 1 || doc.Failures != 0 {
		t.Fatalf("junit = %+v", doc)
	}
	// A bad expectation file is a usage error naming it.
	os.WriteFile(expect, []byte("status = \"completed\"\nanswer_has = \"x\"\n"), 0o644)
	r = inProcess(t, "test", dir)
	want(t, r, exitUsage, "test with a bad expectation")
	if !strings.Contains(r.stderr, expect+`:2:1: unknown key "answer_has"`) {
		t.Fatalf("stderr: %s", r.stderr)
	}
	want(t, inProcess(t, "test", t.TempDir()), exitUsage, "test an empty directory")
	want(t, inProcess(t, "test"), exitUsage, "test without a directory")
}
