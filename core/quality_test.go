package core

import (
	"strings"
	"testing"
)

func TestScoreReply(t *testing.T) {
	call := ToolCall{ID: "1", Name: "get", Args: []byte(`{"k":1}`)}
	prev := Message{Role: RoleAssistant, Content: "It is 5."}
	for _, c := range []struct {
		name   string
		msg    Message
		prev   *Message
		usable bool
		calls  []ToolCall
		recent []string
		score  int
		sigs   string
	}{
		{"a plain answer", Message{Content: "It is 5."}, nil, true, nil, nil, 100, ""},
		{"empty", Message{}, nil, true, nil, nil, 0, "empty"},
		{"blank", Message{Content: " \n"}, nil, false, nil, nil, 0, "empty"},
		{"one hedge", Message{Content: "Maybe 5."}, nil, true, nil, nil, 90, "hedging"},
		{"hedges count once each", Message{Content: "Maybe, maybe, maybe 5."}, nil, true, nil, nil, 90, "hedging"},
		{"four hedges", Message{Content: "I think it might be 5, perhaps, not sure."}, nil, true, nil, nil, 60, "hedging"},
		{"hedging is capped", Message{Content: "I think it might be 5, perhaps, maybe, not sure, could be."}, nil, true, nil, nil, 60, "hedging"},
		{"refusal", Message{Content: "I can’t do that."}, nil, true, nil, nil, 50, "refusal"},
		{"repeated", Message{Content: "It is 5."}, &prev, true, nil, nil, 50, "repeated"},
		{"not usable", Message{Content: "<tool"}, nil, false, nil, nil, 60, "no progress"},
		{"a new call", Message{Calls: []ToolCall{call}}, nil, true, []ToolCall{call}, nil, 100, ""},
		{"a call made before", Message{Calls: []ToolCall{call}}, nil, true, []ToolCall{call}, []string{logEntry(call)}, 60, "no progress"},
		{"everything at once", Message{Content: "It is 5."}, &prev, false, nil, nil, 10, "repeated, no progress"},
		{"never below zero", Message{Content: "As an AI I think it might be, perhaps, not sure"}, &Message{Content: "As an AI I think it might be, perhaps, not sure"}, false, nil, nil, 0, "refusal, hedging, repeated, no progress"},
	} {
		q := ScoreReply(c.msg, c.prev, c.usable, c.calls, c.recent)
		if q.Score != c.score || strings.Join(q.Signals, ", ") != c.sigs {
			t.Errorf("%s: %d %v, want %d %s", c.name, q.Score, q.Signals, c.score, c.sigs)
		}
	}
}

// A reply scoring exactly the threshold is not low quality.
func TestJudgeAtTheThreshold(t *testing.T) {
	for _, c := range []struct {
		threshold float64
		low       bool
	}{{0.7, false}, {0.71, true}, {0.69, false}} {
		cfg := Config{Collaboration: &Collaboration{Threshold: c.threshold}}
		st := State{Messages: []Message{{Role: RoleAssistant, Content: "I think it might be 5, perhaps."}}} // three hedges: 0.70
		if _, q, low := judge(cfg, st, true, nil); low != c.low || q.Score != 70 {
			t.Errorf("threshold %v: score %d low %v, want low %v", c.threshold, q.Score, low, c.low)
		}
	}
}
