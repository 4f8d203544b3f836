package agent

import (
	"fmt"
	"math"

	"github.com/stepwise-agent/stepwise/core"
)

// Collaboration is the [collaboration] table: stuck detection by reply
// quality, pairing [models.primary] with [models.helper] (core.Collaboration).
type Collaboration struct {
	Threshold  *float64 `toml:"threshold"`
	MaxRetries *int     `toml:"max_retries"`
}

// Cycles is the [cycles] table (core.Cycles). NoProgress left out is
// DefaultNoProgress; 0 turns the no-progress check off. Enabled = false
// turns cycle detection off; without the table it is on, with
// DefaultCycleRepeats.
type Cycles struct {
	Enabled    *bool `toml:"enabled"`
	MaxPeriod  int   `toml:"max_period"`
	Repeats    int   `toml:"repeats"`
	NoProgress *int  `toml:"no_progress"`
}

// DefaultNoProgress is [cycles] no_progress when the table leaves it out.
const DefaultNoProgress = 6

// DefaultCycleRepeats is how many times in a row a block of calls must
// come back before it is a cycle when the agent file has no [cycles]
// table: detection is on by default (the Caxton design's "detect and
// prevent infinite tool-call loops"), one repeat more lenient than the
// table's own default, so that an agent that checks its work once more is
// not told it goes round in circles.
const DefaultCycleRepeats = 3

// Budget is the [budget] table (core.Budget). MaxCost is in the currency of
// the models' prices.
type Budget struct {
	MaxInputTokens  int      `toml:"max_input_tokens"`
	MaxOutputTokens int      `toml:"max_output_tokens"`
	MaxCost         *float64 `toml:"max_cost"`
	MaxToolCalls    int      `toml:"max_tool_calls"`
	// Per is conversation (the default: the budgets count the whole
	// conversation) or turn (each user turn from its start).
	Per core.BudgetScope `toml:"per"`
}

// policies converts the run-limit policies' tables into cfg, whose models
// are already set; at makes an error at a key's line.
func policies(f File, cfg *core.Config, at func(path, format string, args ...any) error) error {
	switch f.Policy.OnMaxTurns {
	case "", core.LimitFail, core.LimitAnswer:
	default:
		return at("policy.on_max_turns", "policy.on_max_turns %q is not one of fail, answer", f.Policy.OnMaxTurns)
	}
	switch f.Policy.Citations {
	case core.CiteNone, core.CiteSources, core.CiteTags, core.CiteBoth:
	default:
		return at("policy.citations", "policy.citations %q is not one of sources, tags, both", f.Policy.Citations)
	}
	for _, role := range []string{"primary", "helper"} {
		m, ok := f.Models[role]
		if !ok {
			continue
		}
		p, err := modelPrice(m)
		if err != nil {
			return at("models."+role+"."+err.key, "models.%s.%v", role, err.err)
		}
		if role == "primary" {
			cfg.Models.PrimaryPrice = p
		} else {
			cfg.Models.HelperPrice = p
		}
	}
	if c := f.Collaboration; c != nil {
		if _, ok := f.Models["helper"]; !ok {
			return at("collaboration", "[collaboration] needs [models.helper]: the model asked when the primary is stuck")
		}
		cc := &core.Collaboration{Threshold: core.DefaultThreshold, MaxRetries: core.DefaultMaxRetries}
		if c.Threshold != nil {
			if t := *c.Threshold; math.IsNaN(t) || t <= 0 || t > 1 {
				return at("collaboration.threshold", "collaboration.threshold %v is not above 0 and at most 1", t)
			}
			cc.Threshold = *c.Threshold
		}
		if c.MaxRetries != nil {
			if *c.MaxRetries < 1 {
				return at("collaboration.max_retries", "collaboration.max_retries %d is below 1", *c.MaxRetries)
			}
			cc.MaxRetries = *c.MaxRetries
		}
		cfg.Collaboration = cc
	}
	c := f.Cycles
	if c == nil {
		c = &Cycles{Repeats: DefaultCycleRepeats}
	}
	if c.Enabled == nil || *c.Enabled {
		cc := &core.Cycles{MaxPeriod: c.MaxPeriod, Repeats: c.Repeats, NoProgress: DefaultNoProgress}
		if c.NoProgress != nil {
			cc.NoProgress = *c.NoProgress
		}
		for _, e := range []struct {
			key      string
			v, lo, h int
		}{{"max_period", c.MaxPeriod, 2, 16}, {"repeats", c.Repeats, 2, 8}} {
			if e.v != 0 && (e.v < e.lo || e.v > e.h) {
				return at("cycles."+e.key, "cycles.%s %d is not between %d and %d", e.key, e.v, e.lo, e.h)
			}
		}
		if cc.NoProgress < 0 {
			return at("cycles.no_progress", "cycles.no_progress is negative (0 turns the check off)")
		}
		cfg.Cycles = cc
	}
	b := f.Budget
	for _, l := range []struct {
		key string
		v   int
	}{{"max_input_tokens", b.MaxInputTokens}, {"max_output_tokens", b.MaxOutputTokens}, {"max_tool_calls", b.MaxToolCalls}} {
		if l.v < 0 {
			return at("budget."+l.key, "budget.%s is negative (leave it out for no bound)", l.key)
		}
	}
	switch b.Per {
	case "", core.PerConversation, core.PerTurn:
	default:
		return at("budget.per", "budget.per %q is not one of conversation, turn", b.Per)
	}
	cfg.Budget = core.Budget{MaxInputTokens: b.MaxInputTokens, MaxOutputTokens: b.MaxOutputTokens, MaxToolCalls: b.MaxToolCalls, Per: b.Per}
	if err := contextPolicy(f, cfg, at); err != nil {
		return err
	}
	if err := outputPolicy(f, cfg, at); err != nil {
		return err
	}
	switch c := f.Conversation; c.OnMessage {
	case "", core.OnQueue, core.OnInterrupt:
		if c.MaxMessageBytes < 0 {
			return at("conversation.max_message_bytes", "conversation.max_message_bytes is negative (leave it out for the default, %d)", core.DefaultMaxMessageBytes)
		}
		cfg.Conversation = core.ConversationPolicy{OnMessage: c.OnMessage, MaxMessageBytes: c.MaxMessageBytes}
	default:
		return at("conversation.on_message", "conversation.on_message %q is not one of queue, interrupt", c.OnMessage)
	}
	if b.MaxCost != nil {
		micro, err := microUnits(*b.MaxCost, core.MaxBudgetCost/1_000_000)
		if err != nil {
			return at("budget.max_cost", "budget.max_cost: %v", err)
		}
		if micro == 0 {
			return at("budget.max_cost", "budget.max_cost is 0 (leave it out for no bound)")
		}
		for _, role := range []string{"primary", "helper"} {
			if m, ok := f.Models[role]; ok && m.InputPricePerMillion == nil {
				return at("models."+role, "budget.max_cost needs the prices of [models.%s]: input_price_per_million and output_price_per_million", role)
			}
		}
		cfg.Budget.MaxCost = micro * 1_000_000
	}
	return nil
}

// modelPrice reads a model's prices per million tokens as picounits per
// token (micro-units per million tokens).
func modelPrice(m Model) (core.Price, *keyError) {
	in, out := m.InputPricePerMillion, m.OutputPricePerMillion
	switch {
	case in == nil && out == nil:
		return core.Price{}, nil
	case in == nil:
		return core.Price{}, &keyError{"output_price_per_million", fmt.Errorf("output_price_per_million needs input_price_per_million too")}
	case out == nil:
		return core.Price{}, &keyError{"input_price_per_million", fmt.Errorf("input_price_per_million needs output_price_per_million too")}
	}
	var p core.Price
	var err error
	if p.Input, err = microUnits(*in, core.MaxPrice); err != nil {
		return p, &keyError{"input_price_per_million", fmt.Errorf("input_price_per_million: %v", err)}
	}
	if p.Output, err = microUnits(*out, core.MaxPrice); err != nil {
		return p, &keyError{"output_price_per_million", fmt.Errorf("output_price_per_million: %v", err)}
	}
	return p, nil
}

// microUnits turns an amount given as a decimal number into exact
// micro-units: it must be at least 0, at most limit micro-units, and have no
// more than six decimal places.
func microUnits(v float64, limit int64) (int64, error) {
	if math.IsNaN(v) || v < 0 {
		return 0, fmt.Errorf("%v is not an amount of at least 0", v)
	}
	scaled := v * 1_000_000
	if scaled > float64(limit) {
		return 0, fmt.Errorf("%v is over %s", v, core.FormatCost(limit*1_000_000))
	}
	r := math.Round(scaled)
	if math.Abs(scaled-r) > 1e-3 {
		return 0, fmt.Errorf("%v has more than six decimal places", v)
	}
	return int64(r), nil
}
