package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	c := &command{name: "ls", args: "[--status S] [--agent A] [--limit N] [--json]", summary: "list runs",
		help: `Lists runs, newest first, with status, agent, steps, age and who drives them.
A run's steps is its last step's seq, the number stepwise show ends its timeline
with (step 0, the start, is not counted). A run whose driver died is shown interrupted (resume it), not running. When more runs
match than --limit, the last line says so. A stalled run's NOTE says how many times in a row it
stalled, when it is tried next and why ("stall_attempts", "retry_at" and "reason" in --json).
Listing reads no run's agent file.

` + jsonStatusHelp}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		status := fs.String("status", "", "only runs with this status ("+statusList()+")")
		agentName := fs.String("agent", "", "only runs of this agent")
		limit := fs.Int("limit", 50, "at most this many runs")
		asJSON := fs.Bool("json", false, `print {"runs": [...], "more": bool}`)
		if _, code := e.parse(c, fs, args, 0, 0); code >= 0 {
			return code
		}
		want := store.Status(*status)
		if want != "" && !want.Valid() {
			fmt.Fprintf(e.stderr, "stepwise ls: unknown status %q (want one of %s)\n", *status, statusList())
			return exitUsage
		}
		if *limit < 1 {
			fmt.Fprintf(e.stderr, "stepwise ls: --limit must be at least 1\n")
			return exitUsage
		}
		ctx, st, done, code := e.readSession(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		f := store.Filter{Agent: *agentName}
		switch want {
		case "":
		case store.StatusInterrupted:
			// Runs marked running whose driver died are shown interrupted.
			f.Statuses = []store.Status{store.StatusInterrupted, store.StatusRunning}
		default:
			f.Status = want
		}
		now := time.Now()
		var shown []store.RunInfo
		more := false
		// Filtering by the shown status can drop rows: read in pages until
		// limit+1 rows pass, so "more" is true only when more exist.
		for page := *limit + 1; ; page *= 4 {
			f.Limit = page
			runs, err := st.ListRuns(ctx, f)
			if err != nil {
				return e.storeErr(c.name, err)
			}
			shown = shown[:0]
			for _, r := range runs {
				if s, _ := shownStatus(r, now); want == "" || s == want {
					shown = append(shown, r)
				}
			}
			if len(shown) > *limit || len(runs) < page {
				break
			}
		}
		if len(shown) > *limit {
			shown, more = shown[:*limit], true
		}
		if *asJSON {
			out := struct {
				Runs []jsonRun `json:"runs"`
				More bool      `json:"more"`
			}{Runs: []jsonRun{}, More: more}
			for _, r := range shown {
				j := runJSON(r, now, false)
				if r.Status == store.StatusAwaitingToolResults {
					rec, err := st.LoadLatest(ctx, r.ID)
					if err != nil {
						return e.storeErr(c.name, err)
					}
					j.Pending = pendingTreeJSON(ctx, st, r.ID, rec.State)
				}
				out.Runs = append(out.Runs, j)
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(out)
			return 0
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "RUN\tSTATUS\tAGENT\tSTEPS\tTURNS\tAGE\tDRIVEN BY\tNOTE")
		for _, r := range shown {
			s, _ := shownStatus(r, now)
			holder := "-"
			if shell.Driven(r.Lease, now) {
				holder = shell.DescribeLease(r.Lease, now)
			}
			note := stallNote(r, now)
			if note != "" {
				note += ": " + oneLine(r.Reason)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.ID, s, r.Agent, r.LastSeq, r.Turns, age(now.Sub(r.Updated)), holder, note)
		}
		w.Flush()
		if more {
			fmt.Fprintf(e.stdout, "(more runs match; showing the newest %d: use --limit N)\n", *limit)
		}
		return 0
	}
	register(c)
}

func statusList() string {
	names := make([]string, len(store.Statuses))
	for i, s := range store.Statuses {
		names[i] = string(s)
	}
	return strings.Join(slices.Clip(names), ", ")
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
