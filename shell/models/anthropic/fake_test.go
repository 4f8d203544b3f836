package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
	pt "github.com/stepwise-agent/stepwise/shell/models/internal/providertest"
)

// Content blocks as the Messages API returns them.
const (
	thinkingBlock = `{"type":"thinking","thinking":"The user wants the weather in Paris; the tool gives it.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}`
	textBlock     = `{"type":"text","text":"I'll look up the weather in Paris."}`
	toolBlock     = `{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city": "Paris"}}`
	answerBlock   = `{"type":"text","text":"It is 18 C in Paris."}`
)

const usage = `{"input_tokens":472,"cache_creation_input_tokens":100,"cache_read_input_tokens":2048,"output_tokens":89,"output_tokens_details":{"thinking_tokens":40}}`

// message is a whole message around its blocks.
func message(stop string, blocks ...string) string {
	return `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
		`"content":[` + strings.Join(blocks, ",") + `],"stop_reason":"` + stop + `","stop_sequence":null,"usage":` + usage + `}`
}

// stream is the event stream of that message, as the API sends it:
// message_start with the input usage, each block started empty, its
// text, thinking, signature or input in pieces of n bytes, stopped; a
// ping; message_delta with the stop reason and output usage; message_stop.
func stream(stop string, n int, blocks ...string) []mt.Event {
	var ev []mt.Event
	add := func(typ, fields string) {
		ev = append(ev, mt.Event{Name: typ, Data: `{"type":"` + typ + `"` + fields + `}`})
	}
	start := `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],` +
		`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":100,"cache_read_input_tokens":2048,"output_tokens":1}}`
	add("message_start", `,"message":`+start)
	for i, raw := range blocks {
		var b struct {
			Type, Text, Thinking, Signature, ID, Name string
			Input                                     json.RawMessage
		}
		json.Unmarshal([]byte(raw), &b)
		delta := func(typ, field, text string) {
			for _, piece := range pt.Split(text, n) {
				add("content_block_delta", fmt.Sprintf(`,"index":%d,"delta":{"type":%q,%q:%s}`, i, typ, field, pt.JSONString(piece)))
			}
		}
		switch b.Type {
		case "text":
			add("content_block_start", fmt.Sprintf(`,"index":%d,"content_block":{"type":"text","text":""}`, i))
			delta("text_delta", "text", b.Text)
		case "thinking":
			add("content_block_start", fmt.Sprintf(`,"index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}`, i))
			delta("thinking_delta", "thinking", b.Thinking)
			delta("signature_delta", "signature", b.Signature)
		case "tool_use":
			add("content_block_start", fmt.Sprintf(`,"index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}`, i, b.ID, b.Name))
			add("content_block_delta", fmt.Sprintf(`,"index":%d,"delta":{"type":"input_json_delta","partial_json":""}`, i))
			delta("input_json_delta", "partial_json", string(b.Input))
		}
		add("content_block_stop", fmt.Sprintf(`,"index":%d`, i))
		if i == 0 {
			add("ping", "")
		}
	}
	add("message_delta", `,"delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":89,"output_tokens_details":{"thinking_tokens":40}}`)
	add("message_stop", "")
	return ev
}
