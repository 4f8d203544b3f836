package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	c := &command{name: "show", args: "RUN_ID [--step N]", summary: "show a run as a timeline",
		help: `Shows the run as a readable timeline: each step's result and action, rendered by
the core, with the time between steps and the tokens used. --step N shows one step
in full: the result, the action, the state and the conversation.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		step := fs.Int("step", -1, "show this step in full")
		pos, code := e.parse(c, fs, args, 1, 1)
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
		if *step >= 0 {
			rec, err := st.LoadStep(ctx, pos[0], *step)
			if err != nil {
				return e.storeErr(c.name, err)
			}
			showStep(e, rec)
			return 0
		}
		fmt.Fprintf(e.stdout, "run %s  agent %s  status %s  created %s\n", info.ID, info.Agent, info.Status, info.Created.UTC().Format(time.RFC3339))
		if info.ParentID != "" {
			fmt.Fprintf(e.stdout, "forked from %s at step %d\n", info.ParentID, info.ParentStep)
		}
		fmt.Fprintf(e.stdout, "input: %s\n\n", oneLine(info.Input))
		var prev time.Time
		var last core.State
		err = st.Steps(ctx, pos[0], func(rec store.StepRecord) error {
			dur := ""
			if !prev.IsZero() {
				dur = rec.Created.Sub(prev).Round(time.Millisecond).String()
			}
			prev = rec.Created
			last = rec.State
			if rec.Seq == 0 {
				fmt.Fprintf(e.stdout, "%4d  start %s\n", rec.Seq, core.DescribeState(rec.State))
				return nil
			}
			if rec.Result != nil {
				fmt.Fprintf(e.stdout, "      <- %s\n", core.DescribeResult(rec.Result))
			}
			fmt.Fprintf(e.stdout, "%4d  %s  (%s)\n", rec.Seq, core.DescribeAction(rec.Action), dur)
			return nil
		})
		if err != nil {
			return e.storeErr(c.name, err)
		}
		fmt.Fprintf(e.stdout, "\n%s  tokens %d+%d\n", core.DescribeState(last), last.Counters.PromptTokens, last.Counters.CompletionTokens)
		switch info.Status {
		case store.StatusCompleted:
			fmt.Fprintf(e.stdout, "answer: %s\n", info.Answer)
		case store.StatusFailed:
			fmt.Fprintf(e.stdout, "failed (%s): %s\n", info.FailCode, info.Reason)
		}
		return 0
	}
	register(c)
}

func showStep(e *env, rec store.StepRecord) {
	fmt.Fprintf(e.stdout, "step %d  at %s\n", rec.Seq, rec.Created.UTC().Format(time.RFC3339Nano))
	if rec.Result != nil {
		fmt.Fprintf(e.stdout, "result: %s\n", core.DescribeResult(rec.Result))
	}
	if rec.Action != nil {
		fmt.Fprintf(e.stdout, "action: %s\n", core.DescribeAction(rec.Action))
	}
	fmt.Fprintf(e.stdout, "state:  %s\n\nconversation:\n", core.DescribeState(rec.State))
	for i, m := range rec.State.Messages {
		fmt.Fprintf(e.stdout, "[%d] %s", i, m.Role)
		if m.CallID != "" {
			fmt.Fprintf(e.stdout, " (%s %s)", m.Name, m.CallID)
		}
		fmt.Fprintf(e.stdout, "\n%s\n", indent(m.Content))
		for _, c := range m.Calls {
			fmt.Fprintf(e.stdout, "    -> call %s %s %s\n", c.ID, c.Name, c.Args)
		}
	}
}

func indent(s string) string {
	if s == "" {
		return "    (empty)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
