package core

import (
	"fmt"
	"strings"
)

// helperContext is how many recent messages the helper model sees.
const helperContext = 12

const helperInstructions = "You advise an AI agent that is stuck. Read its task, why it is stuck and " +
	"its recent conversation, then reply with a short, concrete, numbered plan it can follow with its " +
	"tools. Do not call tools yourself and do not answer for it."

func canEscalate(cfg Config, st State) bool {
	return cfg.Models.Helper != "" && st.Counters.Escalations-st.turnBase().Escalations < cfg.maxEscalations()
}

func escalate(st State, reason string) State {
	st.Phase = PhaseEscalate
	st.Escalation = reason
	st.Counters.Escalations++
	return st
}

// helperMessages is the helper's prompt: the task, the reason and the recent
// conversation, bounded so escalating costs the same at any run length.
func helperMessages(cfg Config, st State) []Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\nWhy the agent is stuck: %s\n", st.task(), st.Escalation)
	if names := toolNames(cfg.tools()); len(names) > 0 {
		fmt.Fprintf(&b, "Its tools: %s\n", strings.Join(names, ", "))
	}
	b.WriteString("Recent conversation:\n")
	from := max(0, len(st.Messages)-helperContext)
	for _, m := range st.Messages[from:] {
		if m.Role == RoleSystem {
			continue
		}
		b.WriteString(DescribeMessage(m))
		b.WriteByte('\n')
	}
	return []Message{{Role: RoleSystem, Content: helperInstructions}, {Role: RoleUser, Content: b.String()}}
}

// resumeHelper hands the helper's plan to the primary and lets it try again.
func resumeHelper(st State, r ModelReply) State {
	plan := strings.TrimSpace(r.Text)
	if plan == "" {
		plan = "(the advisor gave no plan: re-read the task and try a different approach)"
	}
	st = appendMessages(st, Message{Role: RoleUser, Content: "A more capable model reviewed your progress and suggests this plan:\n" + plan + "\nFollow it and continue."})
	st.Phase = PhaseModel
	st.Escalation = ""
	st.Counters.Corrections = 0
	st.Counters.LowQuality = 0
	return st
}

func toolNames(tools []Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}
