package shell_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/script"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// A Go function becomes a tool in one call, its schema derived from its
// argument struct; a Registry declares it, and an external tool, once, and
// builds the agent whose core config and implementations both come from
// it.
func ExampleNewTool() {
	type FindUserArgs struct {
		Name string `json:"name" jsonschema:"the user's name"`
		Zip  string `json:"zip,omitempty" jsonschema:"a US zip code, to tell namesakes apart"`
	}
	find := shell.NewTool("find_user", "Find a user by name", func(ctx context.Context, a FindUserArgs) (string, error) {
		if a.Name != "Sarah" {
			return "", fmt.Errorf("no user called %s", a.Name)
		}
		return "Sarah Lee, 12 Elm St, " + a.Zip, nil
	})
	find.Idempotent = true

	reg := shell.NewRegistry()
	if err := reg.Internal(find, &shell.ToolSettings{Cache: &shell.CachePolicy{}}); err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.External(core.Tool{Name: "send_letter", Description: "Post a letter (the caller does it).",
		Parameters: []byte(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(find.Spec().Parameters))
	fmt.Println("send_letter is external:", reg.IsExternal("send_letter"), "- find_user is external:", reg.IsExternal("find_user"))

	cfg := core.DefaultConfig()
	cfg.Name = "directory"
	ag, err := reg.Agent(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	model, _ := script.Parse(strings.NewReader(`{"tool_calls":[{"id":"c1","name":"find_user","arguments":{"name":"Sarah","zip":"10001"}}]}
{"text":"Sarah lives at 12 Elm St."}`), "directory.jsonl")
	ag.Models[core.Primary] = model

	dir, _ := os.MkdirTemp("", "stepwise-example-")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "runs.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "Where does Sarah live?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Status, out.ToolsUsed, out.Answer)
	// Output:
	// {"type":"object","properties":{"name":{"type":"string","description":"the user's name"},"zip":{"type":"string","description":"a US zip code, to tell namesakes apart"}},"required":["name"],"additionalProperties":false}
	// send_letter is external: true - find_user is external: false
	// completed [find_user] Sarah lives at 12 Elm St.
}

// A run pauses when the model calls an external tool: the program, not
// the runner, performs the call. The paused run is durable in the store;
// the program reads the pending calls from the Outcome, performs them,
// and answers with Submit (from this process or another one, later), and
// the run goes on to its answer.
func ExampleRunner_Submit() {
	reg := shell.NewRegistry()
	if err := reg.External(core.Tool{Name: "approve_refund", Description: "Ask a person to approve a refund.",
		Parameters: []byte(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`)}); err != nil {
		fmt.Println(err)
		return
	}
	cfg := core.DefaultConfig()
	cfg.Name = "refunds"
	ag, err := reg.Agent(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	model, _ := script.Parse(strings.NewReader(`{"tool_calls":[{"id":"call_1","name":"approve_refund","arguments":{"amount":42}}]}
{"text":"Your refund of $42 is approved."}`), "refunds.jsonl")
	ag.Models[core.Primary] = model

	dir, _ := os.MkdirTemp("", "stepwise-example-")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "runs.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	r := shell.NewRunner(db, nil)
	ctx := context.Background()

	out, err := r.Start(ctx, ag, "Refund my order, please.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Status)
	var ans shell.Answers
	for _, call := range out.Pending {
		fmt.Printf("%s %s(%s)\n", call.ID, call.Name, call.Args)
		// Perform the call here: ask a person, call a service...
		ans.Results = append(ans.Results, core.ToolResult{CallID: call.ID, Output: "approved"})
	}

	out, err = r.Submit(ctx, ag, out.RunID, ans)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Status, out.Answer)
	// Output:
	// awaiting_tool_results
	// call_1 approve_refund({"amount":42})
	// completed Your refund of $42 is approved.
}

// A run is a conversation: once it answered, Say sends the user's next
// message, and the run goes on in the same log, the model seeing the whole
// conversation. Each Say here drives the turn to its answer; the script
// numbers the conversation's model calls from its start.
func ExampleRunner_Say() {
	find := shell.NewTool("weather", "The weather in a city", func(ctx context.Context, a struct {
		City string `json:"city"`
	}) (string, error) {
		return map[string]string{"Oslo": "rain, 7 C", "Rome": "sun, 21 C"}[a.City], nil
	})
	reg := shell.NewRegistry()
	if err := reg.Internal(find, nil); err != nil {
		fmt.Println(err)
		return
	}
	cfg := core.DefaultConfig()
	cfg.Name = "weather"
	ag, err := reg.Agent(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	model, _ := script.Parse(strings.NewReader(`{"tool_calls":[{"id":"c1","name":"weather","arguments":{"city":"Oslo"}}]}
{"text":"Rain in Oslo, 7 C."}
{"tool_calls":[{"id":"c2","name":"weather","arguments":{"city":"Rome"}}]}
{"text":"Sunny in Rome, 21 C: warmer than Oslo."}
{"text":"Rome was warmer."}`), "weather.jsonl")
	ag.Models[core.Primary] = model

	dir, _ := os.MkdirTemp("", "stepwise-example-")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "runs.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	r := shell.NewRunner(db, nil)
	ctx := context.Background()

	out, err := r.Start(ctx, ag, "Weather in Oslo?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Status, out.Answer)
	for _, msg := range []string{"And in Rome?", "Which city was warmer?"} {
		if out, err = r.Say(ctx, ag, out.RunID, msg); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(out.Status, out.Answer)
	}
	info, _ := db.Run(ctx, out.RunID)
	fmt.Println("turns:", info.Turns, "steps:", info.LastSeq)
	// Output:
	// completed Rain in Oslo, 7 C.
	// completed Sunny in Rome, 21 C: warmer than Oslo.
	// completed Rome was warmer.
	// turns: 3 steps: 10
}
