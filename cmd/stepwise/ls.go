package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	c := &command{name: "ls", args: "[--status S] [--agent A]", summary: "list runs",
		help: "Lists runs, newest first, with status, agent, steps and age."}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		status := fs.String("status", "", "only runs with this status (running, awaiting_tool_results, completed, failed, interrupted)")
		agentName := fs.String("agent", "", "only runs of this agent")
		limit := fs.Int("limit", 50, "at most this many runs")
		if _, code := e.parse(c, fs, args, 0, 0); code >= 0 {
			return code
		}
		switch store.Status(*status) {
		case "", store.StatusRunning, store.StatusAwaitingToolResults, store.StatusCompleted, store.StatusFailed, store.StatusInterrupted:
		default:
			fmt.Fprintf(e.stderr, "stepwise ls: unknown status %q\n", *status)
			return exitUsage
		}
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		runs, err := st.ListRuns(ctx, store.Filter{Status: store.Status(*status), Agent: *agentName, Limit: *limit})
		if err != nil {
			return e.storeErr(c.name, err)
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "RUN\tSTATUS\tAGENT\tSTEPS\tAGE")
		for _, r := range runs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", r.ID, r.Status, r.Agent, r.LastSeq, age(time.Since(r.Updated)))
		}
		w.Flush()
		return 0
	}
	register(c)
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
