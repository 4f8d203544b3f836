package core

import "strings"

// Citations says how a final answer cites what the run used.
type Citations string

// The citation styles. CiteSources appends "\n\nSources: a, b": the sources
// the tools reported (URLs, paths), or, when they reported none, the tools
// a call of which succeeded (State.ToolsOK: a tool whose every call failed
// is no source). CiteTags appends "\n\n[source:a] [source:b]", one tag per
// such tool. CiteBoth appends the tags, then the sources line. Nothing is
// appended when no tool succeeded; CiteNone (the default) never appends.
const (
	CiteNone    Citations = ""
	CiteSources Citations = "sources"
	CiteTags    Citations = "tags"
	CiteBoth    Citations = "both"
)

// cite is the final answer text with the citations the agent asks for.
func cite(cfg Config, st State, text string) string {
	style := cfg.Policy.Citations
	if style == CiteTags || style == CiteBoth {
		if len(st.ToolsOK) > 0 {
			tags := make([]string, len(st.ToolsOK))
			for i, t := range st.ToolsOK {
				tags[i] = "[source:" + t + "]"
			}
			text += "\n\n" + strings.Join(tags, " ")
		}
	}
	if style == CiteSources || style == CiteBoth {
		sources := st.Sources
		if len(sources) == 0 {
			sources = st.ToolsOK // a tool whose every call failed is no source
		}
		if len(sources) > 0 {
			text += "\n\nSources: " + strings.Join(sources, ", ")
		}
	}
	return text
}

// State.ToolsUsed lists the tools whose calls ran, in the order they
// first came back with a result: a tool is listed once a call of it is
// answered (by the shell, by the caller for an external tool, or by
// memory), never when it is only accepted. So a run paused at an external
// call, cancelled, or stopped at a failure (Policy.StopOnError skips the
// rest of a turn) lists exactly the tools that ran (noteRan). A refused
// call (invalid, a repeat the loop policy stopped, a cycle, a budget, an
// escalation) never runs and is never listed.

// noteRan lists the tools of the turn's calls answered by results (not the
// calls skipped after a failure), in the model's order, and in ToolsOK
// those whose call succeeded.
func noteRan(st State, turn *Turn, results []ToolResult) State {
	for _, c := range turn.Calls {
		for _, r := range results {
			if r.CallID == c.ID {
				st.ToolsUsed = addOnce(st.ToolsUsed, c.Name)
				if !r.Failed() {
					st.ToolsOK = addOnce(st.ToolsOK, c.Name)
				}
				break
			}
		}
	}
	return st
}
