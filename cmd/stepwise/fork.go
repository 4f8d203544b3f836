package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func init() {
	c := &command{name: "fork", args: "RUN_ID --at STEP [--result FILE] [--script FILE] [--agent AGENT.toml]", summary: "start a new run from a step of a recorded run",
		help: `Starts a new run from the state at STEP of RUN_ID, then continues live.
With --result, STEP's request gets that result instead of being performed again:
a model reply {"text": "...", "tool_calls": [{"id", "name", "arguments"}]}, tool
results [{"tool_call_id": ..., "result": ...}], or another user message
{"role": "user", "content": "..."}: at a step where a turn was answered, the fork
goes on with that message instead of the one the user sent next (a conversation
can be forked at any step of any turn). With --script, the new run's model
calls are answered from the script, starting at its first line. With --agent, the
new run is driven by that agent file instead of the recorded one.

` + jsonStatusHelp}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		at := fs.Int("at", -1, "the step to fork from (see stepwise show RUN_ID)")
		resultFile := fs.String("result", "", "a different result for STEP (JSON, at most 8 MiB), - for stdin")
		script := fs.String("script", "", "answer the new run's model calls from this JSONL script")
		asJSON := fs.Bool("json", false, "print one JSON object (see stepwise help run)")
		agentFile := fs.String("agent", "", "drive the new run with this agent file instead of the recorded one")
		quiet := fs.Bool("quiet", false, "no progress on stderr")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		if *at < 0 {
			fmt.Fprintf(e.stderr, "stepwise fork: --at STEP is required\n")
			return exitUsage
		}
		var res core.Result
		if *resultFile != "" {
			data, err := e.readBounded(*resultFile, "a result file", maxResultsBytes)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise fork: --result: %v\n", err)
				return exitUsage
			}
			if res, err = parseForkResult(data); err != nil {
				fmt.Fprintf(e.stderr, "stepwise fork: --result: %v\n", err)
				return exitUsage
			}
		}
		scriptPath, code := e.scriptPath(c.name, *script)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		info, err := st.Run(ctx, pos[0])
		if err != nil {
			return e.storeErr(c.name, err)
		}
		var spec *agent.Spec
		var opts agent.BuildOptions
		if *agentFile != "" {
			if spec, code = e.loadAgent(c.name, *agentFile); code >= 0 {
				return code
			}
		} else if spec, opts, err = agent.FromSource(info.Config); err != nil {
			return e.runErr(c.name, err)
		}
		if scriptPath != "" {
			rec, err := st.LoadStep(ctx, pos[0], *at)
			if err != nil {
				return e.storeErr(c.name, err)
			}
			// The script's first line answers the first model call after the fork.
			opts = agent.BuildOptions{Script: scriptPath, ScriptOffset: rec.State.Counters.ModelCalls}
			if rec.State.Pending != nil && rec.State.Pending.Kind == core.PendingModel && res == nil {
				opts.ScriptOffset--
			}
		}
		ag, code := e.build(c.name, spec, opts)
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		r, code := e.runner(spec, ag, st, *quiet || *asJSON, runFlags{})
		if code >= 0 {
			return code
		}
		out, err := r.Fork(ctx, ag, pos[0], *at, res)
		if err != nil {
			return e.runErr(c.name, err)
		}
		return e.report(out, *asJSON)
	}
	register(c)
}

// parseForkResult reads a model reply (an object) or tool results (an array).
func parseForkResult(data []byte) (core.Result, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		ans, err := shell.ParseResults(data)
		if err != nil {
			return nil, err
		}
		if len(ans.NotRun) > 0 {
			return nil, fmt.Errorf("not_run answers in-doubt calls (stepwise resume --results); a fork needs results")
		}
		return core.ToolResults{Results: ans.Results}, nil
	}
	var msg struct {
		Role    core.Role `json:"role"`
		Content string    `json:"content"`
	}
	if json.Unmarshal(data, &msg) == nil && msg.Role != "" {
		if msg.Role != core.RoleUser {
			return nil, fmt.Errorf("a message to fork with is the user's: want {\"role\": \"user\", \"content\": \"...\"}, not role %q", msg.Role)
		}
		return core.UserMessage{Content: msg.Content}, nil
	}
	var reply struct {
		Text      string `json:"text"`
		ToolCalls []struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&reply); err != nil {
		return nil, fmt.Errorf("want a model reply object or a tool results array: %v", err)
	}
	r := core.ModelReply{Text: reply.Text}
	for _, c := range reply.ToolCalls {
		args := string(c.Arguments)
		var s string
		if json.Unmarshal(c.Arguments, &s) == nil {
			args = s
		}
		r.Calls = append(r.Calls, core.NativeCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return r, nil
}
