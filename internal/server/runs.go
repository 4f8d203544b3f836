package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

// maxInput bounds a run's input.
const maxInput = 256 << 10

// route is one route of the API, as openapi.json documents it.
type route struct {
	method, path string
	handle       func(*Server, http.ResponseWriter, *http.Request)
}

// apiRoutes are the API's routes; a test keeps openapi.json true to them.
var apiRoutes = []route{
	{"POST", "/v1/runs", idempotent(true, (*Server).createRun)},
	{"GET", "/v1/runs", (*Server).listRuns},
	{"GET", "/v1/runs/{id}", (*Server).getRun},
	{"GET", "/v1/runs/{id}/steps", (*Server).getSteps},
	{"GET", "/v1/runs/{id}/steps/{seq}/request", (*Server).getStepRequest},
	{"POST", "/v1/runs/{id}/results", idempotent(false, (*Server).postResults)},
	// Not creates: a message makes no run. Its first outcome is kept and a
	// retry with the key gets it back instead of posting the message again.
	{"POST", "/v1/runs/{id}/messages", idempotent(false, (*Server).postMessage)},
	{"GET", "/v1/runs/{id}/messages", (*Server).getMessages},
	{"POST", "/v1/runs/{id}/resume", (*Server).resumeRun},
	{"POST", "/v1/runs/{id}/cancel", (*Server).cancelRun},
	{"POST", "/v1/runs/{id}/fork", (*Server).forkRun},
	{"POST", "/v1/runs/{id}/replay", (*Server).replayRun},
	{"GET", "/v1/runs/{id}/events", limitStreams((*Server).events)},
	{"GET", "/v1/agents", (*Server).listAgents},
	{"GET", "/openapi.json", (*Server).openAPI},
	{"GET", "/healthz", func(_ *Server, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}},
}

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	for _, rt := range apiRoutes {
		m.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
	}
	m.HandleFunc("GET /{$}", s.page)
	m.HandleFunc("GET /ui/{file}", s.asset)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(m, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, errorf(http.StatusMethodNotAllowed, codeMethod, "%s %s: allowed %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		writeError(w, errorf(http.StatusNotFound, codeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return m
}

// allowed lists the methods that have a route for r's path (the catch-all
// route hides the mux's own 405s).
func allowed(m *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, method := range []string{"GET", "POST"} {
		probe := r.Clone(r.Context())
		probe.Method = method
		if _, pattern := m.Handler(probe); pattern != "/" && pattern != "" {
			out = append(out, method)
		}
	}
	return out
}

// decode reads a JSON body into v strictly: unknown fields, trailing data
// and a body over the limit are refused. An empty body is v's zero value
// when empty is allowed.
func decode(r *http.Request, v any, empty bool) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return readError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if empty {
			return nil
		}
		return errorf(http.StatusBadRequest, codeBadRequest, "the request needs a JSON body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, codeBadRequest, "the body: %v", err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, codeBadRequest, "the body holds more than one JSON value")
	}
	return nil
}

// runOptions are the options of POST /v1/runs.
type runOptions struct {
	// Wait, a duration, answers once the run leaves running (completed,
	// failed, paused, stalled) or the wait passes.
	Wait string `json:"wait,omitempty"`
}

// createRequest is POST /v1/runs: an agent and either an input or a
// message history to start from (Messages, in the OpenAI chat format, as
// shell.ParseHistory reads it).
type createRequest struct {
	Agent    string          `json:"agent"`
	Input    string          `json:"input"`
	Messages json.RawMessage `json:"messages,omitempty"`
	Options  runOptions      `json:"options"`
}

// history reads the request's message history; nil when it gives none.
func (req createRequest) history() ([]core.Message, error) {
	if len(req.Messages) == 0 || string(bytes.TrimSpace(req.Messages)) == "null" {
		return nil, nil
	}
	if t := bytes.TrimSpace(req.Messages); t[0] != '[' {
		return nil, fmt.Errorf("%w: messages must be a JSON array of messages", core.ErrBadHistory)
	}
	msgs, err := shell.ParseHistory(req.Messages)
	if err == nil && len(msgs) == 0 {
		err = fmt.Errorf("%w: messages is empty", core.ErrBadHistory)
	}
	return msgs, err
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	wait, err := parseWait(req.Options.Wait)
	if err != nil {
		writeError(w, err)
		return
	}
	history, err := req.history()
	switch {
	case req.Agent == "":
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "agent is required: the name of an agent file in the server's agents directory"))
		return
	case err != nil:
		writeError(w, err)
		return
	case history != nil && req.Input != "":
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "give input or messages, not both"))
		return
	case history == nil && req.Input == "":
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "input or messages is required: the user's message, or a message history to start from"))
		return
	case len(req.Input) > maxInput:
		writeError(w, errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "the input is larger than %d bytes", maxInput))
		return
	}
	ag, _, err := s.agents.byName(req.Agent)
	if err != nil {
		writeError(w, err)
		return
	}
	runner := s.runner
	if id := presetRunID(r.Context()); id != "" {
		runner = s.runnerFor(id)
	}
	in := core.Request{Input: req.Input, Messages: history}
	var id string
	var held *heldRun
	if s.reserve() {
		// A worker waits: the run is created held for it (ADR 0037).
		var c shell.Created
		if c, err = runner.Pool().CreateHeld(r.Context(), ag, in); err == nil {
			id, held = c.ID, &heldRun{ag: ag, c: c}
		} else {
			s.unreserve()
		}
	} else {
		id, err = runner.Pool().CreateFrom(r.Context(), ag, in)
	}
	if errors.Is(err, store.ErrExists) && id == "" && presetRunID(r.Context()) != "" {
		id, err = presetRunID(r.Context()), nil // a retry that raced the first request's creation
	}
	switch {
	case err != nil:
		writeError(w, err)
		return
	case held != nil:
		s.handOver(*held)
	default:
		s.dispatch(id)
	}
	s.respondRun(w, r, id, http.StatusCreated, wait)
}

// parseWait reads a wait option: "" for none, else a duration up to 5m.
func parseWait(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > 5*time.Minute {
		return 0, errorf(http.StatusBadRequest, codeBadRequest, "wait %q: want a duration up to 5m, like 30s", v)
	}
	return d, nil
}

// respondRun answers with the run, after waiting up to wait for it to
// leave running.
func (s *Server) respondRun(w http.ResponseWriter, r *http.Request, id string, status int, wait time.Duration) {
	if wait > 0 {
		wake, done := s.hub.subscribe(id)
		defer done()
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		poll := time.NewTicker(s.cfg.Poll)
		defer poll.Stop()
	waiting:
		for {
			if ri, err := s.cfg.Store.Run(r.Context(), id); err != nil || ri.Status != store.StatusRunning {
				break
			}
			select {
			case <-r.Context().Done():
				return
			case <-deadline.C:
				break waiting
			case <-wake:
			case <-poll.C:
			}
		}
	}
	run, err := s.runJSON(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, status, run)
}

// runJSON is the run with what its last state tells.
func (s *Server) runJSON(ctx context.Context, id string) (apiRun, error) {
	ri, err := s.cfg.Store.Run(ctx, id)
	if err != nil {
		return apiRun{}, err
	}
	return s.runJSONOf(ctx, ri)
}

// runJSONOf is runJSON of a run already read.
func (s *Server) runJSONOf(ctx context.Context, ri store.RunInfo) (apiRun, error) {
	id := ri.ID
	run := s.runOf(ri, time.Now())
	st, seq, err := s.runner.Pool().Latest(ctx, id, ri.LastSeq)
	if err != nil {
		return apiRun{}, err
	}
	run.withState(st)
	if ag, _, err := s.agents.bySource(ri.Config); err == nil && len(ag.SubAgents) > 0 {
		// The tree: read from the run's steps, only for an agent that
		// has sub-agents.
		if children, err := shell.Children(ctx, s.cfg.Store, id); err == nil {
			for _, c := range children {
				run.Children = append(run.Children, apiChild{Step: c.Step, CallID: c.CallID, Tool: c.Tool, ID: c.Info.ID, Agent: c.Info.Agent, Status: string(c.Info.Status)})
			}
		}
	}
	if ri.Status == store.StatusAwaitingToolResults && len(run.Pending) == 0 {
		// Paused on sub-agents: their calls, namespaced (shell.PendingCalls).
		if calls, err := shell.PendingCalls(ctx, s.cfg.Store, id, st); err == nil {
			for _, c := range calls {
				run.Pending = append(run.Pending, callOf(c))
			}
		}
	}
	if !ri.Status.Ended() {
		if ag, _, err := s.agents.bySource(ri.Config); err == nil {
			if doubt, err := s.runner.Pool().InDoubtAt(ctx, ag, id, seq, st); err == nil {
				for _, d := range doubt {
					run.InDoubt = append(run.InDoubt, apiInDoubt{apiCall: callOf(d.Call), Step: d.Step, Started: stamp(d.Started)})
				}
			}
		}
	}
	return run, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.runJSON(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.Filter{Agent: q.Get("agent"), Parent: q.Get("parent"), Limit: defaultPageSize}
	if v := q.Get("status"); v != "" {
		st := store.Status(v)
		if !st.Valid() {
			writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "status %q is not one of the run statuses", v))
			return
		}
		f.Status = st
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "limit %q: want 1 to %d", v, maxListLimit))
			return
		}
		f.Limit = n
	}
	c, err := decodeCursor(q.Get("cursor"))
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "%v", err))
		return
	}
	f.Before = c
	want := f.Limit
	f.Limit++
	runs, err := s.cfg.Store.ListRuns(r.Context(), f)
	if err != nil {
		writeError(w, err)
		return
	}
	out := runList{Runs: []apiRun{}}
	now := time.Now()
	for i, ri := range runs {
		if i == want {
			out.Next = encodeCursor(store.CursorOf(runs[i-1]))
			break
		}
		out.Runs = append(out.Runs, s.runOf(ri, now))
	}
	writeJSON(w, http.StatusOK, out)
}

// Paging of GET /steps and GET /messages: from (the first's number, 0 by
// default) and limit.
const (
	defaultPage = 500
	maxPage     = 5000
)

// pageOf reads from and limit; what words what from numbers.
func pageOf(q url.Values, what string) (from, limit int, err error) {
	limit = defaultPage
	if v := q.Get("from"); v != "" {
		if from, err = strconv.Atoi(v); err != nil || from < 0 {
			return 0, 0, errorf(http.StatusBadRequest, codeBadRequest, "from %q: want %s", v, what)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > maxPage {
			return 0, 0, errorf(http.StatusBadRequest, codeBadRequest, "limit %q: want 1 to %d", v, maxPage)
		}
	}
	return from, limit, nil
}

func (s *Server) getSteps(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	from, limit, err := pageOf(r.URL.Query(), "a step number")
	if err != nil {
		writeError(w, err)
		return
	}
	steps, err := s.stepsAfter(r.Context(), id, from-1, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"steps": nonNilSteps(steps)})
}

// agentFor is the agent a request names (from the agents directory), else
// the one the run is driven by now.
func (s *Server) agentFor(ctx context.Context, id, name string) (*shell.Agent, error) {
	if name != "" {
		ag, _, err := s.agents.byName(name)
		return ag, err
	}
	ri, err := s.cfg.Store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	ag, _, err := s.agents.bySource(ri.Config)
	return ag, err
}

func (s *Server) postResults(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, err)
		return
	}
	ans, err := shell.ParseResults(body)
	if err != nil {
		writeError(w, err)
		return
	}
	ag, err := s.agentFor(r.Context(), id, "")
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := s.runner.Pool().Answer(r.Context(), ag, id, ans); err != nil {
		writeError(w, err)
		return
	}
	s.dispatch(id)
	s.hub.notify(id)
	s.respondRun(w, r, id, http.StatusOK, 0)
}

type resumeRequest struct {
	// Agent, when set, drives the run from now on (the change is recorded).
	Agent string `json:"agent,omitempty"`
	// TakeOver takes the run's lease whatever its holder (an operator's
	// forced take-over, recorded with the run).
	TakeOver bool `json:"take_over,omitempty"`
}

func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req resumeRequest
	if err := decode(r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	ag, err := s.agentFor(r.Context(), id, req.Agent)
	if err != nil {
		writeError(w, err)
		return
	}
	runner := s.runner
	if req.TakeOver {
		opts := s.runnerOpts
		opts.TakeOver = "POST /v1/runs/{id}/resume with take_over"
		runner = shell.NewRunner(s.cfg.Store, &opts)
	}
	if _, err := runner.Pool().Requeue(r.Context(), ag, id); err != nil {
		writeError(w, err)
		return
	}
	s.dispatch(id)
	s.hub.notify(id)
	s.respondRun(w, r, id, http.StatusAccepted, 0)
}

type cancelRequest struct {
	Reason string `json:"reason,omitempty"`
	// TakeOver takes the run's lease whatever its holder and cancels the
	// run at once (an operator's forced take-over, recorded with the run).
	TakeOver bool `json:"take_over,omitempty"`
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req cancelRequest
	if err := decode(r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	ag, err := s.agentFor(r.Context(), id, "")
	if err != nil {
		writeError(w, err)
		return
	}
	// A run a worker here drives ends at once (the runner tells its drive);
	// one another server drives is asked to end, and that server's
	// heartbeat finds the request within a third of the lease's TTL. With
	// take_over, the run is taken from its holder whoever it is (a drive
	// here is fenced out) and cancelled at once.
	runner := s.runner
	if req.TakeOver {
		opts := s.runnerOpts
		opts.TakeOver = "POST /v1/runs/{id}/cancel with take_over"
		runner = shell.NewRunner(s.cfg.Store, &opts)
	}
	if _, err := runner.Cancel(r.Context(), ag, id, req.Reason); err != nil {
		if errors.Is(err, shell.ErrCancelRequested) {
			// Another server drives it: it ends the run at its next step.
			s.respondRun(w, r, id, http.StatusAccepted, 0)
			return
		}
		writeError(w, err)
		return
	}
	s.hub.notify(id)
	s.respondRun(w, r, id, http.StatusOK, 0)
}

// forkRequest forks a run at step At: with Result (tool results, as POST
// results takes them) or Reply (a model reply) that step's request gets
// it; with neither it is performed again.
type forkRequest struct {
	At     *int            `json:"at"`
	Result json.RawMessage `json:"result,omitempty"`
	Reply  *forkReply      `json:"reply,omitempty"`
	Agent  string          `json:"agent,omitempty"`
}

type forkReply struct {
	Text      string            `json:"text"`
	ToolCalls []core.NativeCall `json:"tool_calls,omitempty"`
}

func (s *Server) forkRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req forkRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	if req.At == nil || *req.At < 0 {
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "at, the step to fork from, is required"))
		return
	}
	var res core.Result
	switch {
	case req.Result != nil && req.Reply != nil:
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "give result or reply, not both"))
		return
	case req.Result != nil:
		ans, err := shell.ParseResults(req.Result)
		if err != nil {
			writeError(w, err)
			return
		}
		if len(ans.NotRun) > 0 {
			writeError(w, errorf(http.StatusBadRequest, codeInvalidResults, "not_run answers in-doubt calls; a fork takes results"))
			return
		}
		res = core.ToolResults{Results: ans.Results}
	case req.Reply != nil:
		res = core.ModelReply{Text: req.Reply.Text, Calls: req.Reply.ToolCalls}
	}
	ag, err := s.agentFor(r.Context(), id, req.Agent)
	if err != nil {
		writeError(w, err)
		return
	}
	out, err := s.runner.Pool().Fork(r.Context(), ag, id, *req.At, res)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = errorf(http.StatusNotFound, codeNotFound, "%v", err)
		}
		writeError(w, err)
		return
	}
	s.dispatch(out.RunID)
	s.respondRun(w, r, out.RunID, http.StatusCreated, 0)
}

type replayRequest struct {
	// Agent replays against this agent instead of the recorded ones.
	Agent string `json:"agent,omitempty"`
}

func (s *Server) replayRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req replayRequest
	if err := decode(r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	ri, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	var cfg core.Config
	var changes []shell.ConfigFrom
	if req.Agent != "" {
		p, err := s.agents.path(req.Agent)
		if err != nil {
			writeError(w, err)
			return
		}
		spec, err := agent.Load(p)
		if err != nil {
			writeError(w, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "%v", err))
			return
		}
		cfg = spec.Config
	} else {
		spec, _, err := agent.FromSource(ri.StartConfig)
		if err != nil {
			writeError(w, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "%v", err))
			return
		}
		cfg = spec.Config
		recorded, err := s.cfg.Store.AgentChanges(r.Context(), id)
		if err != nil {
			writeError(w, err)
			return
		}
		for _, ch := range recorded {
			sp, _, err := agent.FromSource(ch.Config)
			if err != nil {
				writeError(w, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "the agent change after step %d: %v", ch.Seq, err))
				return
			}
			changes = append(changes, shell.ConfigFrom{Seq: ch.Seq, Config: sp.Config})
		}
	}
	rep, err := shell.ReplayChanges(r.Context(), s.cfg.Store, id, cfg, changes)
	if err != nil {
		writeError(w, err)
		return
	}
	out := replayReport{RunID: rep.RunID, Steps: rep.Steps, Identical: rep.Diverged == nil}
	if d := rep.Diverged; d != nil {
		out.Divergence = &apiDivergence{Step: d.Seq, Recorded: d.Recorded, Replayed: d.Replayed, Detail: d.Detail}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"agents": nonNilStrings(s.agents.names())})
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
