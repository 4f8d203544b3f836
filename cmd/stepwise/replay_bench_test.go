package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// The corpus of the replay benchmarks: corpusRuns recorded runs of 20 steps
// each (ten model calls, nine read_file calls, the answer), in a SQLite
// database and exported to a directory. Built once per process.
const corpusRuns = 1000

var benchCorpus struct {
	once               sync.Once
	dir, db, runs, err string
	agent              string
}

func buildBenchCorpus(b *testing.B) (agentFile, db, runs string) {
	b.Helper()
	c := &benchCorpus
	c.once.Do(func() {
		// Under the test binary's directory, which TestMain removes.
		dir, err := os.MkdirTemp(filepath.Dir(binary), "replay-bench")
		if err != nil {
			c.err = err.Error()
			return
		}
		c.dir, c.db, c.runs, c.agent = dir, filepath.Join(dir, "runs.db"), filepath.Join(dir, "runs"), filepath.Join(dir, "reader.toml")
		if err := recordBenchCorpus(c.dir, c.agent, c.db, c.runs); err != nil {
			c.err = err.Error()
		}
	})
	if c.err != "" {
		b.Fatal(c.err)
	}
	return c.agent, c.db, c.runs
}

func recordBenchCorpus(dir, agentFile, db, runs string) error {
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	os.Mkdir(runs, 0o755)
	var script strings.Builder
	for i := 1; i <= 9; i++ {
		os.WriteFile(filepath.Join(dir, "data", fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line %d of a file. ", i), 10)), 0o644)
		fmt.Fprintf(&script, `{"tool_calls": [{"id": "r%d", "name": "read_file", "arguments": {"path": "f%d.txt"}}]}`+"\n", i, i)
	}
	script.WriteString(`{"text": "I read nine files."}` + "\n")
	os.WriteFile(filepath.Join(dir, "reader.jsonl"), []byte(script.String()), 0o644)
	os.WriteFile(agentFile, []byte(`name = "reader"
system_prompt = "You read files and summarise them."
format = "native"

[models.primary]
provider = "script"
script = "reader.jsonl"

[[tools]]
builtin = "files"
root = "data"
`), 0o644)
	spec, err := agent.Load(agentFile)
	if err != nil {
		return err
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		return err
	}
	st, err := sqlite.Open(db, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	r := shell.NewRunner(st, nil)
	for i := range corpusRuns {
		out, err := r.Start(ctx, ag, fmt.Sprintf("question %d", i))
		if err != nil {
			return err
		}
		if out.Steps != 20 {
			return fmt.Errorf("run %s: %d steps, want 20", out.RunID, out.Steps)
		}
		f, err := os.Create(filepath.Join(runs, out.RunID+".json"))
		if err != nil {
			return err
		}
		err = st.Export(ctx, out.RunID, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// benchReplay times the CLI replaying the whole corpus in process, and
// checks every run was identical.
func benchReplay(b *testing.B, args ...string) {
	want := fmt.Sprintf("%d runs: %d identical\n", corpusRuns, corpusRuns)
	cpu := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		var out strings.Builder
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard, getenv: func(string) string { return "" }}
		if code := e.main(args); code != 0 || !strings.HasSuffix(out.String(), want) {
			b.Fatalf("exit %d: %s", code, out.String()[max(0, out.Len()-200):])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(corpusRuns), "µs/run")
	// The process's CPU time: on a shared VM, wall time depends on the
	// neighbours; CPU time divided by the cores is the time on an idle one.
	b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplayCorpusFiles: stepwise replay --runs DIR --agent F over
// 1,000 exported runs of 20 steps (docs/performance.md).
func BenchmarkReplayCorpusFiles(b *testing.B) {
	agentFile, _, runs := buildBenchCorpus(b)
	benchReplay(b, "replay", "--runs", runs, "--agent", agentFile)
}

// BenchmarkReplayCorpusDB: stepwise replay --all --agent F over the same
// runs in a SQLite database.
func BenchmarkReplayCorpusDB(b *testing.B) {
	agentFile, db, _ := buildBenchCorpus(b)
	benchReplay(b, "replay", "--all", "--db", db, "--agent", agentFile)
}

// BenchmarkReplayCorpusRecordedAgents: stepwise replay --all, each run
// against the agent it recorded.
func BenchmarkReplayCorpusRecordedAgents(b *testing.B) {
	_, db, _ := buildBenchCorpus(b)
	benchReplay(b, "replay", "--all", "--db", db)
}
