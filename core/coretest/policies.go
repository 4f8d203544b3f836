package coretest

import (
	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// PolicyConfigs generates configs like Configs, each with some of the
// run-limit policies turned on: budgets (small enough to run out), model
// prices, a turn limit with either policy, cycle detection, collaboration
// (when there is a helper) and citations.
func PolicyConfigs(formats ...core.Format) *rapid.Generator[core.Config] {
	return rapid.Custom(func(t *rapid.T) core.Config {
		cfg := Configs(formats...).Draw(t, "base")
		if rapid.Bool().Draw(t, "budget") {
			cfg.Budget = core.Budget{
				MaxInputTokens:  rapid.SampledFrom([]int{0, 1, 40, 120}).Draw(t, "max-input"),
				MaxOutputTokens: rapid.SampledFrom([]int{0, 1, 40, 120}).Draw(t, "max-output"),
				MaxToolCalls:    rapid.IntRange(0, 4).Draw(t, "max-tool-calls"),
			}
		}
		if rapid.Bool().Draw(t, "prices") {
			cfg.Models.PrimaryPrice = core.Price{Input: rapid.Int64Range(0, 3_000_000).Draw(t, "in-price"), Output: rapid.Int64Range(0, 12_000_000).Draw(t, "out-price")}
			cfg.Models.HelperPrice = core.Price{Input: rapid.Int64Range(0, 15_000_000).Draw(t, "helper-in-price"), Output: rapid.Int64Range(0, 60_000_000).Draw(t, "helper-out-price")}
			cfg.Budget.MaxCost = rapid.Int64Range(0, 400_000_000).Draw(t, "max-cost")
		}
		if rapid.Bool().Draw(t, "turns") {
			cfg.Limits.MaxTurns = rapid.IntRange(1, 5).Draw(t, "max-turns")
			cfg.Policy.OnMaxTurns = rapid.SampledFrom([]core.LimitPolicy{"", core.LimitFail, core.LimitAnswer}).Draw(t, "on-max-turns")
		}
		if rapid.Bool().Draw(t, "cycles") {
			cfg.Cycles = &core.Cycles{
				MaxPeriod:  rapid.IntRange(0, 5).Filter(func(n int) bool { return n != 1 }).Draw(t, "max-period"),
				Repeats:    rapid.SampledFrom([]int{0, 2, 3}).Draw(t, "repeats"),
				NoProgress: rapid.IntRange(0, 4).Draw(t, "no-progress"),
			}
		}
		if cfg.Models.Helper != "" && rapid.Bool().Draw(t, "collaboration") {
			cfg.Collaboration = &core.Collaboration{
				Threshold:  rapid.SampledFrom([]float64{0, 0.5, 0.7, 0.95}).Draw(t, "threshold"),
				MaxRetries: rapid.IntRange(0, 3).Draw(t, "max-retries"),
			}
		}
		cfg.Policy.Citations = rapid.SampledFrom([]core.Citations{core.CiteNone, core.CiteSources, core.CiteTags, core.CiteBoth}).Draw(t, "citations")
		return cfg
	})
}
