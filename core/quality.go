package core

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Collaboration pairs the primary model with the helper: when the primary
// is stuck, the helper is asked for a plan (see escalate.go). Without it
// (nil), the primary is stuck when it says so in a final answer
// (Config.StuckPhrases, default DefaultStuckPhrases) or replies with
// nothing, as stepwise always did.
//
// With it, the primary is also stuck after MaxRetries replies in a row
// whose Quality score is below Threshold, and the stuck phrases default to
// DefaultStuckPhrases and CollaborationStuckPhrases together. A stuck
// phrase in a final answer asks the helper at once. A low-quality final
// answer is not accepted while the helper can still be asked: the primary
// is asked to try again, and the helper is asked at the MaxRetries-th low
// reply in a row. A low-quality reply with tool calls runs its calls,
// unless it is the MaxRetries-th, when the calls are not run and the helper
// is asked. Once the helper cannot be asked any more (no escalation left), a
// low-quality answer stands. A reply that scores at or above the threshold,
// and the helper's plan, reset the count.
type Collaboration struct {
	// Threshold is the lowest score a reply may have without counting as
	// low quality, between 0 and 1 (0: 0.7). It is used in hundredths.
	Threshold float64 `json:"threshold,omitempty"`
	// MaxRetries is how many low-quality replies in a row make the primary
	// stuck (0: 3).
	MaxRetries int `json:"max_retries,omitempty"`
}

// Collaboration defaults, as in the reference design.
const (
	DefaultThreshold  = 0.7
	DefaultMaxRetries = 3
)

// CollaborationStuckPhrases returns the reference design's stuck phrases,
// matched case-insensitively (a typographic apostrophe matches '): a new
// slice each time, so that no package can change them for another.
func CollaborationStuckPhrases() []string { return slices.Clone(collaborationStuckPhrases) }

var collaborationStuckPhrases = []string{
	"i'm not sure how to",
	"i don't know how to",
	"i'm unable to",
	"i can't perform this task",
	"this is beyond my capabilities",
}

// The phrases the quality score looks for, matched like the stuck phrases.
var (
	hedgingPhrases = []string{"i think", "perhaps", "maybe", "might be", "not sure", "could be"}
	refusalPhrases = []string{"i can't", "i cannot", "i won't", "i will not", "i'm not able", "i am not able", "as an ai"}
)

// The penalties of the quality score, in hundredths.
const (
	penaltyRefusal    = 50
	penaltyRepeated   = 50
	penaltyNoProgress = 40
	penaltyHedge      = 10 // per distinct hedging phrase
	maxHedgePenalty   = 40
)

// Quality is the score of one primary reply, in hundredths (0 to 100), and
// the signals that lowered it. The score is computed from cheap signals of
// the reply alone and the run's state, with integers only:
//
//   - empty: no text and no tool call. The score is 0.
//   - refusal: the text has a refusal phrase ("i can't", "i cannot", "i
//     won't", "i will not", "i'm not able", "i am not able", "as an ai"): -50.
//   - hedging: -10 for each hedging phrase in the text ("i think",
//     "perhaps", "maybe", "might be", "not sure", "could be"), at most -40.
//   - repeated: the text and the calls (names and arguments) are those of
//     the primary's previous reply: -50.
//   - no progress: the reply could not be used (a correction was needed),
//     or it has calls and every one of them repeats a call among the last
//     ones the run made: -40.
//
// Otherwise the score is 100 less its penalties, and never below 0.
type Quality struct {
	Score   int
	Signals []string
}

func (q Quality) String() string {
	s := fmt.Sprintf("%d.%02d", q.Score/100, q.Score%100)
	if len(q.Signals) > 0 {
		s += " (" + strings.Join(q.Signals, ", ") + ")"
	}
	return s
}

// ScoreReply scores a primary reply: msg is the assistant message it became,
// prev the primary's previous one (nil if none), usable whether it could
// be used as it was, and calls its valid calls. recent are the run's
// recent call-log entries.
func ScoreReply(msg Message, prev *Message, usable bool, calls []ToolCall, recent []string) Quality {
	text := strings.TrimSpace(msg.Content)
	if text == "" && len(msg.Calls) == 0 && len(calls) == 0 {
		return Quality{Score: 0, Signals: []string{"empty"}}
	}
	q := Quality{Score: 100}
	lower := fold(text)
	if containsAny(lower, refusalPhrases) {
		q = q.minus(penaltyRefusal, "refusal")
	}
	hedges := 0
	for _, p := range hedgingPhrases {
		if strings.Contains(lower, p) {
			hedges++
		}
	}
	if hedges > 0 {
		q = q.minus(min(hedges*penaltyHedge, maxHedgePenalty), "hedging")
	}
	if prev != nil && sameReply(*prev, msg) {
		q = q.minus(penaltyRepeated, "repeated")
	}
	if !usable || (len(calls) > 0 && allIn(calls, recent)) {
		q = q.minus(penaltyNoProgress, "no progress")
	}
	return q
}

func (q Quality) minus(n int, signal string) Quality {
	q.Score = max(0, q.Score-n)
	q.Signals = append(q.Signals, signal)
	return q
}

func (c Collaboration) threshold() int {
	t := c.Threshold
	if t == 0 {
		t = DefaultThreshold
	}
	return int(math.Round(t * 100))
}

func (c Collaboration) maxRetries() int { return pick(c.MaxRetries, DefaultMaxRetries) }

func (c Collaboration) errors() []string {
	var errs []string
	if math.IsNaN(c.Threshold) || c.Threshold < 0 || c.Threshold > 1 {
		errs = append(errs, fmt.Sprintf("collaboration.threshold %v is not between 0 and 1", c.Threshold))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, "collaboration.max_retries is negative")
	}
	return errs
}

// fold lowers s and turns typographic apostrophes into plain ones.
func fold(s string) string { return strings.ReplaceAll(strings.ToLower(s), "\u2019", "'") }

func containsAny(lower string, phrases []string) bool {
	for _, p := range phrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// sameReply compares two assistant messages by text and calls, not ids.
func sameReply(a, b Message) bool {
	if strings.TrimSpace(a.Content) != strings.TrimSpace(b.Content) || len(a.Calls) != len(b.Calls) {
		return false
	}
	for i := range a.Calls {
		if a.Calls[i].Name != b.Calls[i].Name || string(a.Calls[i].Args) != string(b.Calls[i].Args) {
			return false
		}
	}
	return true
}

func allIn(calls []ToolCall, recent []string) bool {
	for _, c := range calls {
		if !containsString(recent, logEntry(c)) {
			return false
		}
	}
	return true
}

// previousReply is the primary's last reply before the one just appended.
func previousReply(st State) *Message {
	for i := len(st.Messages) - 2; i >= 0; i-- {
		if st.Messages[i].Role == RoleAssistant {
			return &st.Messages[i]
		}
	}
	return nil
}

// judge scores the primary's reply just appended to the log and keeps the
// count of low-quality replies in a row. It returns the quality and whether
// the reply is low.
func judge(cfg Config, st State, usable bool, calls []ToolCall) (State, Quality, bool) {
	var recent []string
	if st.Recent != nil {
		recent = st.Recent.Calls
	}
	msg := st.Messages[len(st.Messages)-1]
	q := ScoreReply(msg, previousReply(st), usable, calls, recent)
	if q.Score >= cfg.Collaboration.threshold() {
		st.Counters.LowQuality = 0
		return st, q, false
	}
	st.Counters.LowQuality++
	return st, q, true
}

// stuckNow reports, for a low-quality reply, whether the primary is now
// stuck and the helper can be asked.
func stuckNow(cfg Config, st State) bool {
	return st.Counters.LowQuality >= cfg.Collaboration.maxRetries() && canEscalate(cfg, st)
}

func lowReason(cfg Config, st State, q Quality) string {
	t := cfg.Collaboration.threshold()
	if n := st.Counters.LowQuality; n > 1 {
		return fmt.Sprintf("the model's last %d replies scored below %d.%02d (the last: %s)", n, t/100, t%100, q)
	}
	return fmt.Sprintf("the model's reply scored %s, below %d.%02d", q, t/100, t%100)
}

// collaborateOnAnswer decides on a final answer under Collaboration. It
// returns the next state, or ok false when the answer should stand.
func collaborateOnAnswer(cfg Config, st State, text string) (State, bool) {
	if phrase := stuckPhraseIn(cfg, text); phrase != "" && canEscalate(cfg, st) {
		return escalate(st, fmt.Sprintf("the model said it is stuck (%q)", phrase)), true
	}
	st, q, low := judge(cfg, st, true, nil)
	if !low || !canEscalate(cfg, st) {
		return st, false
	}
	if stuckNow(cfg, st) {
		return escalate(st, lowReason(cfg, st, q)), true
	}
	st = appendMessages(st, Message{Role: RoleUser, Content: fmt.Sprintf("Your reply does not read as a final answer: it scored %s. "+
		"Use your tools to make progress, or reply with a clear, definite final answer.", q)})
	st.Phase = PhaseModel
	return st, true
}

// collaborateOnCalls decides on a reply with valid calls under
// Collaboration: ok is true when the calls may run.
func collaborateOnCalls(cfg Config, st State, msg Message, calls []ToolCall) (State, bool) {
	st, q, low := judge(cfg, st, true, calls)
	if !low || !stuckNow(cfg, st) {
		return st, true
	}
	st = refuseCalls(st, msg, "these calls were not run: a more capable model is being asked for a plan.")
	return escalate(st, lowReason(cfg, st, q)), false
}

// collaborateOnCorrection counts a reply that could not be used. It returns
// the run escalated when the primary is now stuck.
func collaborateOnCorrection(cfg Config, st State) (State, bool) {
	st, q, low := judge(cfg, st, false, nil)
	if low && stuckNow(cfg, st) {
		return escalate(st, lowReason(cfg, st, q)), true
	}
	return st, false
}

// stuckPhraseIn is stuckPhrase under Collaboration: its phrases, folded.
func stuckPhraseIn(cfg Config, text string) string {
	phrases := cfg.StuckPhrases
	if len(phrases) == 0 {
		phrases = append(slices.Clone(defaultStuckPhrases), collaborationStuckPhrases...)
	}
	lower := fold(text)
	for _, p := range phrases {
		if p != "" && strings.Contains(lower, fold(p)) {
			return p
		}
	}
	return ""
}

// correct is correction with Collaboration's count: a reply that could not
// be used is low quality, and the MaxRetries-th in a row asks the helper.
func correct(cfg Config, st State, msg Message, errs []string) State {
	if cfg.Collaboration == nil {
		return correction(cfg, st, msg, errs)
	}
	st, q, low := judge(cfg, st, false, nil)
	st = correction(cfg, st, msg, errs)
	if st.Phase == PhaseModel && low && stuckNow(cfg, st) {
		return escalate(st, lowReason(cfg, st, q))
	}
	return st
}
