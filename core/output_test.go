package core

import (
	"errors"
	"strings"
	"testing"
)

const verdictSchema = `{"type":"object","properties":{"label":{"type":"string","enum":["spam","ham"]},"score":{"type":"number","minimum":0,"maximum":1}},"required":["label","score"],"additionalProperties":false}`

func outputConfig() Config {
	cfg := testConfig()
	cfg.Output = &OutputPolicy{Schema: []byte(verdictSchema)}
	return cfg
}

// An answer that fits the schema completes the run with its canonical JSON
// (read through a Markdown fence); the system prompt names the schema.
func TestStructuredAnswer(t *testing.T) {
	cfg := outputConfig()
	st := mustStart(t, cfg, "classify: win a prize")
	if !strings.Contains(st.Messages[0].Content, verdictSchema) {
		t.Fatalf("the system prompt lacks the schema: %s", st.Messages[0].Content)
	}
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "```json\n{ \"score\": 0.97, \"label\": \"spam\" }\n```"})
	c, ok := mustStep(t, cfg, st).(Complete)
	if !ok || c.Answer != `{"label":"spam","score":0.97}` || string(c.Output) != c.Answer || !st.Structured {
		t.Fatalf("complete: %+v", c)
	}
	b, _ := EncodeAction(c)
	back, err := DecodeAction(b, st)
	if err != nil || string(back.(Complete).Output) != c.Answer {
		t.Fatalf("the decoded action's output: %v %v", back, err)
	}
}

// An answer that does not fit goes back to the model with the schema and
// the mismatch, once by default; a second in a row fails the run.
func TestStructuredAnswerThatDoesNotFit(t *testing.T) {
	cfg := outputConfig()
	st := mustStart(t, cfg, "classify")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: `{"label":"eggs","score":"0.5"}`})
	m, ok := mustStep(t, cfg, st).(RequestModelCall)
	if !ok {
		t.Fatalf("want a correction: %s", DescribeState(st))
	}
	last := m.Messages[len(m.Messages)-1].Content
	for _, want := range []string{"must be one JSON value that fits this JSON Schema", `"eggs"`, `field "score": expected a number`} {
		if !strings.Contains(last, want) {
			t.Errorf("the correction lacks %q:\n%s", want, last)
		}
	}
	st = mustResume(t, cfg, m.Next(), ModelReply{Text: "It is spam."})
	f, ok := mustStep(t, cfg, st).(Fail)
	if !ok || f.Code != FailInvalidOutput || !strings.Contains(f.Reason, "did not fit the output schema 2 time(s)") {
		t.Fatalf("want invalid_output: %s", DescribeState(st))
	}
	cfg.Output.NoCorrections = true
	st = mustStart(t, cfg, "classify")
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "spam"})
	if f, ok := mustStep(t, cfg, st).(Fail); !ok || f.Code != FailInvalidOutput {
		t.Fatalf("no corrections: %s", DescribeState(st))
	}
}

// A schema that does not compile is a config error.
func TestOutputSchemaIsChecked(t *testing.T) {
	cfg := testConfig()
	cfg.Output = &OutputPolicy{Schema: []byte(`{"type":"object","properties":{"a":{"type":"strnig"}}}`)}
	if _, err := Start(cfg, Request{Input: "x"}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "output.schema") {
		t.Fatalf("a bad schema: %v", err)
	}
}
