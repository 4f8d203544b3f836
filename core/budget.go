package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Budget bounds what one run may spend. A zero field is no bound.
//
// What is counted: the input (prompt) and output (completion) tokens every
// model reply reports, primary and helper alike (Counters.PromptTokens,
// Counters.CompletionTokens); their cost at the prices of the role that
// answered (Counters.Cost); and the tool calls accepted to run
// (Counters.ToolCalls), memory calls included.
//
// When it is checked: before every request. Before a model call, the run
// fails with FailBudget if a token or cost budget is used up (used >=
// max). When a reply asks for tool calls, before they are requested: the
// run fails if a token or cost budget is used up, or if running the turn's
// calls would take the tool calls past MaxToolCalls. A reply that is a
// final answer is never refused: it is already paid for.
//
// How far a budget can be overshot: a model call is only made while every
// token and cost budget has some left, and what a call uses is known only
// when it returns, so a run ends at most one model call's usage past a
// token or cost budget: used - (the last reply's usage) < max. Tool calls
// are counted before they run, so MaxToolCalls is never passed.
type Budget struct {
	MaxInputTokens  int `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// MaxCost is in picounits: 10^-12 of the currency the prices are in
	// (0.50 is 500_000_000_000).
	MaxCost      int64 `json:"max_cost,omitempty"`
	MaxToolCalls int   `json:"max_tool_calls,omitempty"`
	// Per is what the budgets count: the whole conversation (PerConversation,
	// the default) or each user turn from its start (PerTurn).
	Per BudgetScope `json:"per,omitempty"`
}

// BudgetScope is what a Budget counts.
type BudgetScope string

// The budget scopes.
const (
	PerConversation BudgetScope = "conversation"
	PerTurn         BudgetScope = "turn"
)

// spent is what the budgets count of c: all of it, or with PerTurn what
// the user turn in progress has used.
func (b Budget) spent(st State) Counters {
	c := st.Counters
	if b.Per != PerTurn || st.Conv == nil {
		return c
	}
	base := st.Conv.Base
	c.PromptTokens -= base.PromptTokens
	c.CompletionTokens -= base.CompletionTokens
	c.Cost -= base.Cost
	c.ToolCalls -= base.ToolCalls
	return c
}

// Price is what a model's tokens cost, in picounits per token, which is the
// same number as micro-units per million tokens: a price of 0.15 per million
// tokens is 150_000. Integers keep the cost exact and the same on every
// machine: a reply costs input*Input + output*Output picounits, summed into
// Counters.Cost without rounding.
type Price struct {
	Input  int64 `json:"input,omitempty"`
	Output int64 `json:"output,omitempty"`
}

// Picounits is how many picounits one unit of currency is.
const Picounits = 1_000_000_000_000

// MaxPrice bounds a price (1,000 per million tokens), so that a cost cannot
// overflow; MaxBudgetCost bounds Budget.MaxCost (one million).
const (
	MaxPrice      = 1_000 * 1_000_000
	MaxBudgetCost = 1_000_000 * Picounits
)

// The budgets, named as in the agent file's [budget] table.
const (
	budgetInput  = "max_input_tokens"
	budgetOutput = "max_output_tokens"
	budgetCost   = "max_cost"
	budgetCalls  = "max_tool_calls"
)

func (c Config) price(role ModelRole) Price {
	if role == Helper {
		return c.Models.HelperPrice
	}
	return c.Models.PrimaryPrice
}

func (c Config) priced() bool {
	return c.Models.PrimaryPrice != (Price{}) || c.Models.HelperPrice != (Price{})
}

// charge adds a reply's cost, at its role's price, to the run's cost. It is
// kept only while the agent has prices, so an agent without them stores
// what it stored before costs existed.
func charge(cfg Config, st State, role ModelRole, u Usage) State {
	if !cfg.priced() {
		return st
	}
	p := cfg.price(role)
	cost := addCapped(mulCapped(max(0, u.PromptTokens), p.Input), mulCapped(max(0, u.CompletionTokens), p.Output))
	st.Counters.Cost = addCapped(st.Counters.Cost, cost)
	return st
}

// spentOut names the first token or cost budget the run has used up, with
// how much of it was used, or returns "".
func spentOut(cfg Config, st State) string {
	b, c := cfg.Budget, cfg.Budget.spent(st)
	switch {
	case b.MaxInputTokens > 0 && c.PromptTokens >= b.MaxInputTokens:
		return fmt.Sprintf("%s is %d tokens and the run has used %d", budgetInput, b.MaxInputTokens, c.PromptTokens)
	case b.MaxOutputTokens > 0 && c.CompletionTokens >= b.MaxOutputTokens:
		return fmt.Sprintf("%s is %d tokens and the run has used %d", budgetOutput, b.MaxOutputTokens, c.CompletionTokens)
	case b.MaxCost > 0 && c.Cost >= b.MaxCost:
		return fmt.Sprintf("%s is %s and the run has spent %s", budgetCost, FormatCost(b.MaxCost), FormatCost(c.Cost))
	}
	return ""
}

// callsOverBudget checks a turn of n calls against every budget before its
// calls are requested: it says why the run must fail when a token or cost
// budget is used up or the calls would pass MaxToolCalls, else "".
func callsOverBudget(cfg Config, st State, n int) string {
	if why := spentOut(cfg, st); why != "" {
		return why
	}
	if limit, made := cfg.Budget.MaxToolCalls, cfg.Budget.spent(st).ToolCalls; limit > 0 && made+n > limit {
		return fmt.Sprintf("%s is %d, the run has made %d and the model asked for %d more", budgetCalls, limit, made, n)
	}
	return ""
}

// spend adds what a call spent (a sub-agent's run) to the run's counters,
// each kept as the run keeps its own.
func spend(cfg Config, st State, s *Spent) State {
	if s == nil {
		return st
	}
	st.Counters.PromptTokens += max(0, s.PromptTokens)
	st.Counters.CompletionTokens += max(0, s.CompletionTokens)
	if cfg.priced() || cfg.Budget.MaxCost > 0 {
		st.Counters.Cost = addCapped(st.Counters.Cost, max(0, s.Cost))
	}
	if cfg.Budget.MaxToolCalls > 0 {
		st.Counters.ToolCalls += max(0, s.ToolCalls)
	}
	return st
}

// countCalls counts a turn's accepted calls while the agent has a
// MaxToolCalls budget.
func countCalls(cfg Config, st State, n int) State {
	if cfg.Budget.MaxToolCalls > 0 {
		st.Counters.ToolCalls += n
	}
	return st
}

func exhausted(st State, why string) State {
	return failed(st, FailBudget, "the run's budget is used up: "+why)
}

// FormatCost renders picounits as a decimal amount of currency, exactly,
// without trailing zeros: 512_345_000_000 is "0.512345".
func FormatCost(pico int64) string {
	sign := ""
	if pico < 0 {
		sign, pico = "-", -pico
	}
	whole, frac := pico/Picounits, pico%Picounits
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	return sign + strconv.FormatInt(whole, 10) + "." + strings.TrimRight(fmt.Sprintf("%012d", frac), "0")
}

func mulCapped(n int, p int64) int64 {
	if n == 0 || p <= 0 {
		return 0
	}
	if p > math.MaxInt64/int64(n) {
		return math.MaxInt64
	}
	return int64(n) * p
}

func addCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (b Budget) errors() []string {
	var errs []string
	for _, l := range []struct {
		name string
		v    int64
	}{
		{budgetInput, int64(b.MaxInputTokens)}, {budgetOutput, int64(b.MaxOutputTokens)},
		{budgetCost, b.MaxCost}, {budgetCalls, int64(b.MaxToolCalls)},
	} {
		if l.v < 0 {
			errs = append(errs, fmt.Sprintf("budget.%s is negative", l.name))
		}
	}
	switch b.Per {
	case "", PerConversation, PerTurn:
	default:
		errs = append(errs, fmt.Sprintf("budget.per %q is not one of conversation, turn", b.Per))
	}
	if b.MaxCost > MaxBudgetCost {
		errs = append(errs, fmt.Sprintf("budget.max_cost is over %s", FormatCost(MaxBudgetCost)))
	}
	return errs
}

func (p Price) errors(role ModelRole) []string {
	var errs []string
	for _, v := range []struct {
		name string
		v    int64
	}{{"input", p.Input}, {"output", p.Output}} {
		if v.v < 0 || v.v > MaxPrice {
			errs = append(errs, fmt.Sprintf("models.%s_price.%s is %d, not between 0 and %d picounits per token", role, v.name, v.v, MaxPrice))
		}
	}
	return errs
}
