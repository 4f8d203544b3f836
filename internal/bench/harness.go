package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// The harness workload (issue 29): what a benchmark harness of the
// tau-bench kind stores. Many short runs of one agent, each a task: a
// long policy prompt (PromptBytes of prose) and Tools tools, a user
// request, a few tool calls and an answer. What it measures is the store's
// bytes per step: the growth of the database (every table and index, the
// file on SQLite, the relations compacted on PostgreSQL) over the steps
// stored. The agent's file and its prompt are the same in every run; what
// a step costs beyond them is the run's own.

// HarnessOptions sizes the harness workload.
type HarnessOptions struct {
	// Runs is how many runs (default 165), Calls the tool calls of each
	// (default 4: 10 steps a run), PromptBytes the system prompt's size
	// (default 10,240), Tools how many tools the agent has (default 16).
	Runs, Calls, PromptBytes, Tools int
	// DB is a PostgreSQL URL; empty: SQLite, in Dir (a temporary
	// directory when empty).
	DB, Dir string
}

// HarnessReport is what the harness workload measured.
type HarnessReport struct {
	Store       string  `json:"store"`
	Runs        int     `json:"runs"`
	Steps       int     `json:"steps"`
	PromptBytes int     `json:"prompt_bytes"`
	Tools       int     `json:"tools"`
	AgentBytes  int     `json:"agent_bytes"` // the agent file the runs record
	Bytes       int64   `json:"bytes"`       // the database's growth
	PerStep     float64 `json:"bytes_per_step"`
}

func (o *HarnessOptions) defaults() {
	if o.Runs <= 0 {
		o.Runs = 165
	}
	if o.Calls <= 0 {
		o.Calls = 4
	}
	if o.PromptBytes <= 0 {
		o.PromptBytes = 10 << 10
	}
	if o.Tools <= 0 {
		o.Tools = 16
	}
}

// Harness runs the harness workload and measures it.
func Harness(opts HarnessOptions) (HarnessReport, error) {
	opts.defaults()
	ctx := context.Background()
	ag := harnessAgent(opts)
	rep := HarnessReport{Runs: opts.Runs, PromptBytes: opts.PromptBytes, Tools: opts.Tools, AgentBytes: len(ag.Source)}
	// The database's size before the runs, and a function for after them.
	var (
		st     store.Store
		before int64
		after  func() (int64, error)
	)
	if opts.DB != "" {
		rep.Store = "postgres"
		db, cleanup, err := postgres.OpenTestSchemaOptions(ctx, opts.DB, "bench_harness", nil)
		if err != nil {
			return rep, err
		}
		defer cleanup()
		st = db
		after = func() (int64, error) { return storeBytes(ctx, db.Pool()) }
		if before, err = after(); err != nil {
			return rep, err
		}
	} else {
		rep.Store = "sqlite"
		dir := opts.Dir
		if dir == "" {
			d, err := os.MkdirTemp("", "stepwise-harness")
			if err != nil {
				return rep, err
			}
			defer os.RemoveAll(d)
			dir = d
		}
		path := filepath.Join(dir, "harness.db")
		// Closing the store checkpoints its WAL into the file: the file's
		// size is then the data's, the empty store's first.
		size := func() (int64, error) {
			fi, err := os.Stat(path)
			if err != nil {
				return 0, err
			}
			return fi.Size(), nil
		}
		db, err := sqlite.Open(path, nil)
		if err == nil {
			err = db.Close()
		}
		if err == nil {
			before, err = size()
		}
		if err == nil {
			db, err = sqlite.Open(path, nil)
		}
		if err != nil {
			return rep, err
		}
		closed := false
		defer func() {
			if !closed {
				db.Close()
			}
		}()
		st = db
		after = func() (int64, error) {
			closed = true
			if err := db.Close(); err != nil {
				return 0, err
			}
			return size()
		}
	}
	n := 0
	runner := shell.NewRunner(st, &shell.Options{NewID: func() string { n++; return fmt.Sprintf("task-%03d", n) }})
	for i := range opts.Runs {
		out, err := runner.Start(ctx, ag, harnessTask(i))
		if err != nil {
			return rep, err
		}
		if out.Status != store.StatusCompleted {
			return rep, fmt.Errorf("harness run %s ended %s", out.RunID, out.Status)
		}
		rep.Steps += out.Steps
	}
	total, err := after()
	if err != nil {
		return rep, err
	}
	rep.Bytes = total - before
	rep.PerStep = float64(rep.Bytes) / float64(rep.Steps)
	return rep, nil
}

// harnessModel calls echo calls times, then answers.
type harnessModel struct{ calls int }

func (m harnessModel) Complete(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if req.Call > m.calls {
		return core.ModelReply{Text: "The order is updated and the customer has been told; nothing else is pending."}, nil
	}
	return core.ModelReply{Calls: []core.NativeCall{{
		ID: fmt.Sprintf("call_%d", req.Call), Name: "echo", Arguments: fmt.Sprintf(`{"text":"look up step %d of the task"}`, req.Call),
	}}}, nil
}

// harnessAgent is the harness's agent: a policy prompt of opts.PromptBytes,
// echo and opts.Tools-1 more tools, and the agent file it was built from
// (its TOML, as shell/agent records it) as its source.
func harnessAgent(opts HarnessOptions) *shell.Agent {
	cfg := core.DefaultConfig()
	cfg.Name = "airline"
	cfg.SystemPrompt = policyPrompt(opts.PromptBytes)
	e := echo{}
	cfg.Tools = []core.Tool{e.Spec()}
	impls := map[string]shell.Tool{"echo": e}
	for i := 1; i < opts.Tools; i++ {
		t := extraTool(i)
		cfg.Tools = append(cfg.Tools, t.spec)
		impls[t.spec.Name] = t
	}
	var toml strings.Builder
	fmt.Fprintf(&toml, "name = %q\nsystem_prompt = '''\n%s'''\n\n[models.primary]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n", cfg.Name, cfg.SystemPrompt)
	for _, t := range cfg.Tools {
		fmt.Fprintf(&toml, "\n[[tools]]\nname = %q\ndescription = %q\nparameters = '''%s'''\n", t.Name, t.Description, t.Parameters)
	}
	src, _ := json.Marshal(map[string]string{"path": "/bench/airline.toml", "dir": "/bench", "toml": toml.String()})
	return &shell.Agent{
		Config: cfg,
		Models: map[core.ModelRole]shell.ModelProvider{core.Primary: harnessModel{calls: opts.Calls}},
		Tools:  impls,
		Source: src,
	}
}

// harnessTask is the user's request of task i.
func harnessTask(i int) string {
	return fmt.Sprintf("Hi, this is customer %d. I booked reservation R%05d last week and need to change the return "+
		"flight to the following Friday, keeping the same cabin; please use the card on file.", 1000+i, 7919*i%100000)
}

// policyPrompt is bytes of policy prose: sentences drawn from a fixed
// vocabulary by a seeded generator, so that it compresses as prose does,
// not as a repeated line would.
func policyPrompt(bytes int) string {
	words := strings.Fields(`the agent must never may only should always customer reservation flight booking cabin economy
		business basic change cancel refund voucher certificate payment card gift baggage checked allowance insurance
		travel passenger membership gold silver regular policy within hours before departure after confirm explicit
		consent user identity verify name date birth number order status delivered pending exchange return item
		product price difference original method credit points transfer human representative tool call one at a time
		do not make up information procedures instructions provided by or knowledge subjective recommendations`)
	r := rand.New(rand.NewPCG(29, 10))
	var b strings.Builder
	b.WriteString("# Airline agent policy\n\n")
	for b.Len() < bytes {
		n := 8 + r.IntN(14)
		for j := range n {
			w := words[r.IntN(len(words))]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if j < n-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(". ")
		if r.IntN(5) == 0 {
			b.WriteString("\n\n- ")
		}
	}
	return b.String()[:bytes]
}
