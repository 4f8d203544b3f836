package core

import "testing"

// The fuzz targets run over their seed corpus (testdata/fuzz/FuzzParse*) in
// every `go test`, and explore with `go test -fuzz FuzzParseXML ./core/`
// (make fuzz runs each). Each checks that Parse does not panic, fails only
// with a located ParseError, and yields calls whose arguments are JSON
// objects.

func fuzzParse(f *testing.F, format Format, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkParseOutcome(t, format, text)
	})
}

func FuzzParseXML(f *testing.F) {
	fuzzParse(f, FormatXML, `<tool name="search" tag="a1">{"query": "x"}</tool>`)
}

func FuzzParseJSON(f *testing.F) {
	fuzzParse(f, FormatJSON, `{"message": "m", "tools": [{"tool": "search", "args": {"query": "x"}, "tag": "a1"}]}`)
}

func FuzzParseFenced(f *testing.F) {
	fuzzParse(f, FormatFenced, "```tool\n{\"tool\": \"search\", \"parameters\": {\"query\": \"x\"}}\n```")
}

func FuzzParseStrict(f *testing.F) {
	fuzzParse(f, FormatStrict, `{"tool": "search", "args": {"query": "x"}}`)
}

func FuzzParseHelpers(f *testing.F) {
	fuzzParse(f, FormatHelpers, "<helpers>\nuser = find_user(name=\"Sarah\", zip=\"10001\")\n</helpers>",
		"<helpers>\nuser = find_user(name=\"Sarah\")\norders(user_id=user[\"id\"], note=f\"for {user['name']}\" + \"!\", **{\"k\": [user, 1.5]})\n</helpers>")
}

func FuzzParseAuto(f *testing.F) {
	fuzzParse(f, FormatAuto, "Looking.\n<tool name=\"search\">{\"query\": \"x\"}</tool>")
}
