package shell

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// current is the agent as it is now (see Agent.Live).
func (a *Agent) current() *Agent {
	if a == nil || a.Live == nil {
		return a
	}
	if now := a.Live(); now != nil {
		return now
	}
	return a
}

// changeAgent records that the run goes on with changed instead of ag from
// its next step (when the agent records a source), and says so.
func (r *Runner) changeAgent(ctx context.Context, h *holding, cur *cursor, ag, changed *Agent) error {
	if err := r.check(changed); err != nil {
		return fmt.Errorf("run %s: the agent changed into one that cannot run: %w", cur.id, err)
	}
	if changed.Source != nil && !bytes.Equal(changed.Source, ag.Source) {
		if err := r.store.ChangeAgent(ctx, h.lease(), changed.Source); err != nil {
			return r.lostOr(h, fmt.Errorf("run %s: record the changed agent: %w", cur.id, err))
		}
	}
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "agent", Text: describeToolChange(ag, changed)}
	})
	return nil
}

// describeToolChange says which tools a change added and removed.
func describeToolChange(from, to *Agent) string {
	var before, after []string
	for _, t := range from.Config.Tools {
		before = append(before, t.Name)
	}
	for _, t := range to.Config.Tools {
		after = append(after, t.Name)
	}
	var added, removed []string
	for _, n := range after {
		if !slices.Contains(before, n) {
			added = append(added, "+"+n)
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			removed = append(removed, "-"+n)
		}
	}
	if len(added)+len(removed) == 0 {
		return "the agent changed (same tool names)"
	}
	return "tools changed: " + strings.Join(append(added, removed...), ", ")
}
