package bench

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// echoOutput is the ~200-byte tool output of every turn.
var echoOutput = strings.Repeat("stepwise-bench ", 13) + "echo"

// model answers model call k (1-based) with one echo call while k <= n,
// then with the final answer. It timestamps every call: a turn is the time
// between two model calls (model call, tool call, both checkpointed), less
// what the bench itself does at the first: sample the heap, and time the
// floor (probe).
type model struct {
	n     int
	calls []span
	heap  heapSampler
	probe floorProbe
}

// span is when the model was called, and when the bench's own work at
// that call ended.
type span struct{ start, sampled time.Time }

// overhead is the time the bench's own work at the model calls took.
func (m *model) overhead() time.Duration {
	var d time.Duration
	for _, c := range m.calls {
		d += c.sampled.Sub(c.start)
	}
	return d
}

// turns are the turns' times in µs.
func (m *model) turns() []float64 {
	var out []float64
	for i := 1; i < len(m.calls); i++ {
		out = append(out, float64(m.calls[i].start.Sub(m.calls[i-1].sampled).Nanoseconds())/1e3)
	}
	return out
}

func (m *model) Complete(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	start := time.Now()
	m.heap.sample()
	if m.probe != nil {
		if err := m.probe.sample(2); err != nil { // a turn's two checkpoints' worth
			return core.ModelReply{}, err
		}
	}
	m.calls = append(m.calls, span{start, time.Now()})
	if req.Call > m.n {
		return core.ModelReply{Text: fmt.Sprintf("done after %d turns", m.n)}, nil
	}
	return core.ModelReply{Calls: []core.NativeCall{{
		ID: fmt.Sprintf("c%d", req.Call), Name: "echo", Arguments: fmt.Sprintf(`{"text":"turn %d"}`, req.Call),
	}}}, nil
}

// echo returns its input and a fixed ~200-byte text.
type echo struct{}

func (echo) Spec() core.Tool {
	return core.Tool{Name: "echo", Description: "Echo the text.", Idempotent: true,
		Parameters: []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)}
}

func (echo) Run(_ context.Context, c core.ToolCall, _ shell.RunContext) core.ToolResult {
	return core.ToolResult{Output: echoOutput}
}

// agent is the workload's agent for n turns.
func agent(n int, m *model) *shell.Agent { return agentWith(n, m, 1) }

// agentWith is the workload's agent for n turns with tools tools: echo,
// and tools-1 more of a real agent's size (never called).
func agentWith(n int, m *model, tools int) *shell.Agent {
	cfg := core.DefaultConfig()
	cfg.Name = "bench"
	cfg.SystemPrompt = "Call echo once per turn."
	cfg.Limits.MaxSteps = 2*n + 10
	cfg.Limits.MaxStateBytes = 1 << 30
	e := echo{}
	cfg.Tools = []core.Tool{e.Spec()}
	impls := map[string]shell.Tool{"echo": e}
	for i := 1; i < tools; i++ {
		t := extraTool(i)
		cfg.Tools = append(cfg.Tools, t.spec)
		impls[t.spec.Name] = t
	}
	return &shell.Agent{
		Config: cfg,
		Models: map[core.ModelRole]shell.ModelProvider{core.Primary: m},
		Tools:  impls,
		Source: []byte(`{"bench":true}`),
	}
}

// extra is one of the tools a real agent carries besides the one called.
type extra struct{ spec core.Tool }

func (x extra) Spec() core.Tool { return x.spec }
func (x extra) Run(_ context.Context, c core.ToolCall, _ shell.RunContext) core.ToolResult {
	return core.ToolResult{Output: "ok"}
}

// extraTool is tool i of a real agent's size: a description and a schema
// of four documented parameters, about 600 bytes in all.
func extraTool(i int) extra {
	return extra{spec: core.Tool{
		Name: fmt.Sprintf("tool_%02d", i),
		Description: fmt.Sprintf("Tool %d of the bench's agent: looks records up in the inventory by name, "+
			"category and date range, and returns the matching rows as a table.", i),
		Parameters: []byte(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"the record's name, or a prefix of it"},` +
			`"category":{"type":"string","enum":["hardware","software","services","other"],"description":"the category to search"},` +
			`"from":{"type":"string","description":"the first date, as YYYY-MM-DD"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"how many rows at most"}},` +
			`"required":["name"],"additionalProperties":false}`),
	}}
}

// heapSampler keeps the largest heap readings it was asked to take: the
// heap's objects (live ones and garbage not yet collected), and the live
// heap as the last garbage collection found it.
type heapSampler struct {
	samples    []metrics.Sample
	peak, live uint64
}

func (h *heapSampler) sample() {
	if h.samples == nil {
		h.samples = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	}
	metrics.Read(h.samples)
	for i, peak := range []*uint64{&h.peak, &h.live} {
		if v := h.samples[i].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > *peak {
			*peak = v.Uint64()
		}
	}
}
