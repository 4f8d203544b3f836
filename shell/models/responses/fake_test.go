package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
	pt "github.com/stepwise-agent/stepwise/shell/models/internal/providertest"
)

// Output items as the Responses API returns them.
const (
	reasoningItem = `{"id":"rs_01","type":"reasoning","summary":[{"type":"summary_text","text":"The user wants the weather; call the tool."}],"encrypted_content":"gAAAAABoEnc-opaque=="}`
	callItem      = `{"id":"fc_01","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_W1","name":"get_weather"}`
	textItem      = `{"id":"msg_01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"It is 18 C in Paris."}]}`
)

// response is a whole response around its output items.
func response(status string, usage string, items ...string) string {
	return `{"id":"resp_01","object":"response","created_at":1741476542,"status":"` + status + `","error":null,"incomplete_details":null,` +
		`"instructions":null,"max_output_tokens":null,"model":"o4-mini-2025-04-16","output":[` + strings.Join(items, ",") + `],` +
		`"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"medium","summary":null},"store":false,"temperature":1.0,` +
		`"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":` + usage + `,"user":null,"metadata":{}}`
}

const usage = `{"input_tokens":120,"input_tokens_details":{"cached_tokens":64},"output_tokens":58,"output_tokens_details":{"reasoning_tokens":32},"total_tokens":178}`

// stream is the event stream of a response with the given items, as the
// API sends it: created, each item added with its deltas and done, then
// completed (or what final names) with the whole response. The deltas
// split each text and each call's arguments into pieces of n bytes.
func stream(final string, n int, items ...string) []mt.Event {
	seq := 0
	var ev []mt.Event
	add := func(typ string, fields string) {
		ev = append(ev, mt.Event{Name: typ, Data: fmt.Sprintf(`{"type":%q,"sequence_number":%d,%s}`, typ, seq, fields)})
		seq++
	}
	add("response.created", `"response":`+response("in_progress", "null"))
	add("response.in_progress", `"response":`+response("in_progress", "null"))
	for i, item := range items {
		var head struct {
			ID, Type, Name, Arguments string
			Summary                   []struct{ Text string }
			Content                   []struct{ Text string }
		}
		json.Unmarshal([]byte(item), &head)
		added := item
		if head.Type == "function_call" {
			added = strings.Replace(item, `"arguments":`+pt.JSONString(head.Arguments), `"arguments":""`, 1)
		}
		add("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":%s`, i, added))
		for _, piece := range pt.Split(head.Arguments, n) {
			add("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":%q,"output_index":%d,"delta":%s`, head.ID, i, pt.JSONString(piece)))
		}
		for k, s := range head.Summary {
			for _, piece := range pt.Split(s.Text, n) {
				add("response.reasoning_summary_text.delta", fmt.Sprintf(`"item_id":%q,"output_index":%d,"summary_index":%d,"delta":%s`, head.ID, i, k, pt.JSONString(piece)))
			}
		}
		for k, c := range head.Content {
			for _, piece := range pt.Split(c.Text, n) {
				add("response.output_text.delta", fmt.Sprintf(`"item_id":%q,"output_index":%d,"content_index":%d,"delta":%s,"logprobs":[]`, head.ID, i, k, pt.JSONString(piece)))
			}
		}
		add("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":%s`, i, item))
	}
	status := strings.TrimPrefix(final, "response.")
	add(final, `"response":`+response(status, usage, items...))
	return ev
}
