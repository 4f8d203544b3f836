package agenttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// Filter selects recorded runs. Zero fields select everything.
type Filter struct {
	// Statuses selects runs with any of these statuses. A run marked
	// running whose driver died counts as interrupted, as `stepwise ls`
	// shows it.
	Statuses []store.Status
	// Agent selects the runs of this agent (by name).
	Agent string
	// Since selects the runs created at or after it.
	Since time.Time
}

// Match reports whether f selects run r, judged at now.
func (f Filter) Match(r store.RunInfo, now time.Time) bool {
	if f.Agent != "" && r.Agent != f.Agent {
		return false
	}
	if !f.Since.IsZero() && r.Created.Before(f.Since) {
		return false
	}
	if len(f.Statuses) == 0 {
		return true
	}
	status := r.Status
	if r.Orphaned(now) {
		status = store.StatusInterrupted
	}
	return slices.Contains(f.Statuses, status)
}

// pageSize is how many runs FromStore lists at a time.
const pageSize = 500

// FromStore lists the runs of st that f selects, oldest first, as
// recordings to replay.
func FromStore(ctx context.Context, st store.Store, f Filter) ([]Recording, error) {
	now := time.Now()
	lf := store.Filter{Agent: f.Agent, Limit: pageSize}
	if len(f.Statuses) > 0 {
		lf.Statuses = slices.Clone(f.Statuses)
		if slices.Contains(f.Statuses, store.StatusInterrupted) && !slices.Contains(f.Statuses, store.StatusRunning) {
			lf.Statuses = append(lf.Statuses, store.StatusRunning) // orphaned ones, kept by Match
		}
	}
	var recs []Recording
	for {
		page, err := st.ListRuns(ctx, lf)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		for _, r := range page {
			if !f.Since.IsZero() && r.Created.Before(f.Since) {
				slices.Reverse(recs)
				return recs, nil // newest first: the rest are older still
			}
			if f.Match(r, now) {
				recs = append(recs, Recording{Name: r.ID, RunID: r.ID})
			}
		}
		if len(page) < pageSize {
			slices.Reverse(recs)
			return recs, nil
		}
		lf.Before = store.CursorOf(page[len(page)-1])
	}
}

// FromDir lists the export files in dir (*.json, not its subdirectories),
// in name order, as recordings to replay.
func FromDir(dir string) ([]Recording, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var recs []Recording
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		recs = append(recs, Recording{Name: p, File: p})
	}
	return recs, nil
}
