package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// concierge is the conversation agent of testdata/agents/concierge.toml: its
// script answers 20 user turns, the last a transfer to a person.
const concierge = "testdata/agents/concierge.toml"

func conciergeMessages(turn int) string {
	items := []string{"desk lamp", "office chair", "monitor arm"}
	switch {
	case turn == 20:
		return "Can I talk to a person, please?"
	case turn%2 == 1:
		return fmt.Sprintf("How much is the %s?", items[turn%3])
	}
	return fmt.Sprintf("Thanks. When is breakfast? (%d)", turn)
}

// A conversation of 20 user turns through the CLI: run, then say 19 times
// (once from stdin); the last turn pauses for an external call that ends
// the turn. ls counts the turns, show groups the steps by turn, replay
// checks every turn, and a fork at an answered turn goes on with another
// message.
func TestConversationOfTwentyTurns(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", concierge, conciergeMessages(1), "--json")
	want(t, r, exitCompleted)
	id := decodeOutcome(t, r).RunID
	steps := map[int]int{} // turn -> the step that answered it
	steps[1] = decodeOutcome(t, r).Steps
	for turn := 2; turn <= 19; turn++ {
		if turn == 7 {
			r = cli(t, db, conciergeMessages(turn), "say", id, "--json")
		} else {
			r = cli(t, db, "", "say", id, conciergeMessages(turn), "--json")
		}
		want(t, r, exitCompleted)
		o := decodeOutcome(t, r)
		if o.RunID != id || !strings.HasPrefix(o.Answer, fmt.Sprintf("Turn %d:", turn)) {
			t.Fatalf("turn %d: %+v", turn, o)
		}
		steps[turn] = o.Steps
	}
	r = cli(t, db, "", "say", id, conciergeMessages(20), "--json")
	want(t, r, exitPaused)
	if o := decodeOutcome(t, r); len(o.Pending) != 1 || o.Pending[0].Name != "transfer_to_human" {
		t.Fatalf("turn 20: %+v", o)
	}
	r = cli(t, db, "", "resume", id, "--results", "testdata/results/transfer.json", "--json")
	want(t, r, exitCompleted)
	if o := decodeOutcome(t, r); o.Answer != "Hello, this is Sam at the front desk. How can I help?" || o.Steps != 61 {
		t.Fatalf("the transfer did not end the turn with its result: %+v", o)
	}

	ls := cli(t, db, "", "ls", "--json")
	want(t, ls, 0)
	var list struct {
		Runs []struct {
			ID    string `json:"id"`
			Turns int    `json:"turns"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(ls.stdout), &list); err != nil || len(list.Runs) != 1 || list.Runs[0].Turns != 20 {
		t.Fatalf("ls --json: %v %s", err, ls.stdout)
	}
	show := cli(t, db, "", "show", id)
	want(t, show, 0)
	for _, s := range []string{"── turn 1\n", "── turn 20\n", `<- user "Can I talk to a person, please?"`, "turn=20"} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	rep := cli(t, db, "", "replay", id)
	want(t, rep, exitCompleted)
	if !strings.Contains(rep.stdout, "61 steps replayed, identical") {
		t.Fatalf("replay: %s", rep.stdout)
	}

	// Fork where turn 3 was answered, with another message: the fork goes
	// on from there, its model seeing turns 1 to 3 and the new message.
	msg := filepath.Join(t.TempDir(), "msg.json")
	if err := os.WriteFile(msg, []byte(`{"role": "user", "content": "Is there a gym?"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "fork.jsonl")
	if err := os.WriteFile(script, []byte(`{"text": "Yes, on the top floor."}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fork := cli(t, db, "", "fork", id, "--at", fmt.Sprint(steps[3]), "--result", msg, "--script", script, "--json")
	want(t, fork, exitCompleted)
	fo := decodeOutcome(t, fork)
	if fo.Answer != "Yes, on the top floor." || fo.Steps != 2 {
		t.Fatalf("fork: %+v", fo)
	}
	fshow := cli(t, db, "", "show", fo.RunID, "--step", "1")
	want(t, fshow, 0)
	if !strings.Contains(fshow.stdout, "Is there a gym?") || !strings.Contains(fshow.stdout, "How much is the desk lamp?") {
		t.Fatalf("the fork's step lacks the conversation:\n%s", fshow.stdout)
	}
	// Closing the conversation: cancel on a completed run; then a message is refused.
	c := cli(t, db, "", "cancel", id, "--json")
	want(t, c, 0)
	if o := decodeOutcome(t, c); o.Status != "cancelled" || !strings.Contains(o.Error, "conversation was closed") {
		t.Fatalf("close: %+v", o)
	}
	r = cli(t, db, "", "say", id, "Hello again?")
	want(t, r, exitUsage)
	if !strings.Contains(r.stderr, "the conversation has ended") {
		t.Fatalf("a message to a closed conversation: %s", r.stderr)
	}
}

// Bad messages get a clear error and exit 2, and nothing is stored.
func TestSayRefusals(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", concierge, conciergeMessages(1), "--json")
	want(t, r, exitCompleted)
	id := decodeOutcome(t, r).RunID
	for _, c := range []struct {
		name, stdin string
		args        []string
		stderr      string
	}{
		{"unknown run", "", []string{"say", "r-nope", "hi"}, "not found"},
		{"empty", "", []string{"say", id, "   "}, "the message is empty"},
		{"empty stdin", "\n", []string{"say", id}, "the message is empty"},
		{"over the agent's limit", "", []string{"say", id, strings.Repeat("x", 2001)}, "the message is too large: 2001 bytes, over the limit of 2000"},
		{"no run id", "", []string{"say"}, "usage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, db, c.stdin, c.args...)
			want(t, r, exitUsage, c.args...)
			if !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(c.stderr)) {
				t.Fatalf("stderr %q lacks %q", r.stderr, c.stderr)
			}
		})
	}
	show := cli(t, db, "", "show", id, "--json")
	want(t, show, 0)
	var s struct {
		Run struct {
			Turns int `json:"turns"`
			Steps int `json:"steps"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(show.stdout), &s); err != nil || s.Run.Turns != 1 || s.Run.Steps != 4 {
		t.Fatalf("a refused message changed the run: %v %s", err, show.stdout)
	}
	// A failed run's conversation has ended.
	f := cli(t, db, "", "run", "testdata/agents/looper.toml", "go", "--json")
	want(t, f, exitFailed)
	r = cli(t, db, "", "say", decodeOutcome(t, f).RunID, "try again")
	want(t, r, exitUsage)
	if !strings.Contains(r.stderr, "the conversation has ended") {
		t.Fatalf("a message to a failed run: %s", r.stderr)
	}
}

// A message sent while the run is paused for an external call waits for the
// next model call: the transfer ends the first turn, and the queued message
// begins the second at once.
func TestMessageWhilePausedIsQueued(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	script := "testdata/scripts/concierge-queue.jsonl"
	r := cli(t, db, "", "run", concierge, "Can I talk to a person?", "--script", script, "--json")
	want(t, r, exitPaused)
	id := decodeOutcome(t, r).RunID
	r = cli(t, db, "", "say", id, "Is breakfast included?", "--script", script, "--json")
	want(t, r, exitPaused)
	if o := decodeOutcome(t, r); o.Steps != 3 || len(o.Pending) != 1 {
		t.Fatalf("the queued message changed the pause: %+v", o)
	}
	r = cli(t, db, "", "resume", id, "--results", "testdata/results/transfer.json", "--script", script, "--json")
	want(t, r, exitCompleted)
	if o := decodeOutcome(t, r); o.Answer != "Yes: breakfast is included, from 7 to 10." {
		t.Fatalf("after the results: %+v", o)
	}
	show := cli(t, db, "", "show", id)
	want(t, show, 0)
	for _, s := range []string{"── turn 2\n   3  <- user \"Is breakfast included?\"\n      external call_t20", "turn=2"} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	want(t, cli(t, db, "", "replay", id), exitCompleted)
}

// A run starts from an OpenAI-format history: the model sees it whole, the
// run counts its user messages as turns, and replay starts from it as
// recorded. A history that breaks the rules is refused, nothing stored.
func TestRunFromAMessageHistory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	script := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(script, []byte(`{"text": "From 7 to 10."}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli(t, db, "", "run", concierge, "--messages", "testdata/messages/concierge-history.json", "--script", script, "--json")
	want(t, r, exitCompleted)
	o := decodeOutcome(t, r)
	if o.Answer != "From 7 to 10." || o.Steps != 2 {
		t.Fatalf("run --messages: %+v", o)
	}
	step := cli(t, db, "", "show", o.RunID, "--step", "1")
	want(t, step, 0)
	for _, s := range []string{"Be brief.", "-> call call_h1 read_file", "The desk lamp is 42.50 EUR.", "Thanks. When is breakfast?"} {
		if !strings.Contains(step.stdout, s) {
			t.Errorf("the first model call lacks %q:\n%s", s, step.stdout)
		}
	}
	ls := cli(t, db, "", "ls")
	if !strings.Contains(ls.stdout, "concierge  2      2  ") {
		t.Errorf("ls does not show 2 steps and 2 turns:\n%s", ls.stdout)
	}
	want(t, cli(t, db, "", "replay", o.RunID), exitCompleted)
	// The same history from stdin, then a message after it.
	data, _ := os.ReadFile("../../testdata/messages/concierge-history.json")
	script2 := filepath.Join(t.TempDir(), "s2.jsonl")
	if err := os.WriteFile(script2, []byte("{\"text\": \"From 7 to 10.\"}\n{\"text\": \"Yes, on the top floor.\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = cli(t, db, string(data), "run", concierge, "--messages", "-", "--script", script2, "--json")
	want(t, r, exitCompleted)
	r = cli(t, db, "", "say", decodeOutcome(t, r).RunID, "Is there a gym?", "--script", script2, "--json")
	want(t, r, exitCompleted)
	if o := decodeOutcome(t, r); o.Answer != "Yes, on the top floor." {
		t.Fatalf("say after a history: %+v", o)
	}

	for _, c := range []struct{ name, history, want string }{
		{"unknown role", `[{"role": "robot", "content": "hi"}]`, `unknown role "robot"`},
		{"call without result", `[{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [{"id": "x", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}, {"role": "user", "content": "b"}]`, `call "x" has no result`},
		{"result without call", `[{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "y", "content": "?"}]`, `call "y", which no assistant message made`},
		{"not JSON", `[{"role": "user"`, "want a JSON array"},
		{"unknown field", `[{"role": "user", "content": "a", "mood": "happy"}]`, `unknown field "mood"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := cli(t, db, "", "ls", "--json").stdout
			r := cli(t, db, c.history, "run", concierge, "--messages", "-")
			want(t, r, exitUsage)
			if !strings.Contains(r.stderr, "bad message history") || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("stderr %q lacks %q", r.stderr, c.want)
			}
			if after := cli(t, db, "", "ls", "--json").stdout; after != before {
				t.Fatalf("a refused history stored a run")
			}
		})
	}
	if r := cli(t, db, "", "run", concierge, "hello", "--messages", "testdata/messages/concierge-history.json"); r.code != exitUsage || !strings.Contains(r.stderr, "not both") {
		t.Fatalf("an input and a history: %d %s", r.code, r.stderr)
	}
}
