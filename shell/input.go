package shell

import (
	"errors"

	"github.com/stepwise-agent/stepwise/core"
)

// ErrInputTooLarge is a run's input over InputLimit: Runner.Start and
// Pool.Create refuse it before anything is stored.
var ErrInputTooLarge = errors.New("the input is too large")

// InputLimit is the most bytes a run's input may hold for an agent of
// cfg: a quarter of its state limit (limits.max_state_bytes, 8 MiB by
// default, so 2 MiB), since the first state holds the input twice (the
// request and the user message) and the conversation needs room. A larger
// input could never fit the run's state.
func InputLimit(cfg core.Config) int {
	n := cfg.Limits.MaxStateBytes
	if n <= 0 {
		n = core.DefaultLimits().MaxStateBytes
	}
	return n / 4
}
