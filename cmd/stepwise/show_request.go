package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

// showRequest prints the request the model received at step seq of the
// run (show --step N --request): as an HTTP request, the body as sent,
// or with asJSON as one object.
func showRequest(ctx context.Context, e *env, st store.Store, runID string, seq int, asJSON bool) int {
	out, err := agent.RenderStep(ctx, st, runID, seq)
	switch {
	case errors.Is(err, shell.ErrNoModelCall), errors.Is(err, agent.ErrInvalid):
		fmt.Fprintf(e.stderr, "stepwise show: run %s: %v\n", runID, err)
		return exitUsage
	case err != nil:
		return e.storeErr("show", err)
	}
	if asJSON {
		return e.writeJSON(out)
	}
	if out.Method == "" {
		fmt.Fprintf(e.stdout, "%s (no HTTP request)\n", out.Provider)
	} else {
		fmt.Fprintf(e.stdout, "%s %s\n", out.Method, out.URL)
	}
	for _, name := range slices.Sorted(maps.Keys(out.Headers)) {
		fmt.Fprintf(e.stdout, "%s: %s\n", name, out.Headers[name])
	}
	fmt.Fprintf(e.stdout, "\n%s\n", out.Body)
	return 0
}
