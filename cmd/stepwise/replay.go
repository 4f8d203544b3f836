package main

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func init() {
	c := &command{name: "replay", args: "RUN_ID [--agent AGENT.toml]", summary: "re-drive a recorded run offline and check it decides the same",
		help: `Re-drives the core with the run's recorded results, calling no model and no tool,
and checks that every action matches the recording byte for byte. With --agent
(a changed prompt, a new limit), reports the first step where the decisions
diverge, the recorded and the new action side by side.
Exit 0 when identical, 1 on divergence.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		agentFile := fs.String("agent", "", "replay with this agent file instead of the recorded one")
		asJSON := fs.Bool("json", false, "print the report as JSON")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.readSession(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		var spec *agent.Spec
		var changes []shell.ConfigFrom
		if *agentFile != "" {
			if spec, code = e.loadAgent(c.name, *agentFile); code >= 0 {
				return code
			}
		} else {
			// The recorded agent, and every change made to it while the
			// run went on (resume --agent), each from its step on.
			info, err := st.Run(ctx, pos[0])
			if err != nil {
				return e.storeErr(c.name, err)
			}
			if spec, _, err = agent.FromSource(info.StartConfig); err != nil {
				return e.runErr(c.name, err)
			}
			recorded, err := st.AgentChanges(ctx, pos[0])
			if err != nil {
				return e.storeErr(c.name, err)
			}
			for _, ch := range recorded {
				s, _, err := agent.FromSource(ch.Config)
				if err != nil {
					return e.runErr(c.name, fmt.Errorf("the agent change after step %d: %w", ch.Seq, err))
				}
				changes = append(changes, shell.ConfigFrom{Seq: ch.Seq, Config: s.Config})
			}
		}
		rep, err := shell.ReplayChanges(ctx, st, pos[0], spec.Config, changes)
		if err != nil {
			return e.storeErr(c.name, err)
		}
		if *asJSON {
			out := map[string]any{"run_id": rep.RunID, "steps": rep.Steps, "identical": rep.Diverged == nil}
			if d := rep.Diverged; d != nil {
				out["divergence"] = map[string]any{"step": d.Seq, "recorded": d.Recorded, "replayed": d.Replayed, "detail": d.Detail}
			}
			b, _ := json.Marshal(out)
			fmt.Fprintln(e.stdout, string(b))
		} else if d := rep.Diverged; d != nil {
			fmt.Fprintf(e.stdout, "run %s diverges at step %d:\n  recorded: %s\n  replayed: %s\n", rep.RunID, d.Seq, d.Recorded, d.Replayed)
			if d.Detail != "" {
				fmt.Fprintf(e.stdout, "  %s\n", d.Detail)
			}
		} else {
			fmt.Fprintf(e.stdout, "run %s: %d steps replayed, identical\n", rep.RunID, rep.Steps)
		}
		if rep.Diverged != nil {
			return exitFailed
		}
		return 0
	}
	register(c)
}
