package agent

import (
	"context"
	"fmt"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// StepReader is what RenderStep reads of a store.
type StepReader interface {
	Run(ctx context.Context, runID string) (store.RunInfo, error)
	LoadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error)
	AgentChanges(ctx context.Context, runID string) ([]store.AgentChange, error)
}

// RenderStep renders the request the model got at step seq of a run
// (shell.RenderModelCall) with the agent that made the step's model call:
// the one the run started with, or the last agent change recorded at or
// before the step. (resume --agent records its change at the step it
// resumes from, and the new agent makes that step's pending request; a
// change a running agent records after a step's request, its MCP tools',
// keeps its model settings.) The agent's models
// are built with Models and Render: no MCP server is started, no API key
// or script file read, no model contacted. The body is the bytes the
// provider sent, except that the value of one of the agent's secrets,
// were it there, is replaced by its marker, as in the headers and the URL
// (and everywhere stepwise shows a run).
//
// Errors: store.ErrNotFound for an unknown run or step, shell.ErrNoModelCall
// for a step whose action is not a model call, ErrInvalid for a recorded
// agent that does not load.
func RenderStep(ctx context.Context, st StepReader, runID string, seq int) (shell.StepRequest, error) {
	info, err := st.Run(ctx, runID)
	if err != nil {
		return shell.StepRequest{}, err
	}
	rec, err := st.LoadStep(ctx, runID, seq)
	if err != nil {
		return shell.StepRequest{}, err
	}
	src := info.StartConfig
	changes, err := st.AgentChanges(ctx, runID)
	if err != nil {
		return shell.StepRequest{}, err
	}
	for _, ch := range changes {
		if ch.Seq <= seq {
			src = ch.Config
		}
	}
	spec, opts, err := FromSource(src)
	if err != nil {
		return shell.StepRequest{}, fmt.Errorf("run %s step %d: %w", runID, seq, err)
	}
	opts.Render = true
	models, err := spec.Models(opts)
	if err != nil {
		return shell.StepRequest{}, fmt.Errorf("run %s step %d: the recorded agent: %w", runID, seq, err)
	}
	out, err := shell.RenderModelCall(rec, models, spec.Config)
	if err != nil {
		return shell.StepRequest{}, err
	}
	x := shell.NewRedactor(spec.Secrets())
	out.URL = x.String(out.URL)
	if len(out.Body) > 0 {
		out.Body = []byte(x.String(string(out.Body)))
	}
	for k, v := range out.Headers {
		out.Headers[k] = x.String(v)
	}
	return out, nil
}
