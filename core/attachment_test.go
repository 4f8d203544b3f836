package core

import (
	"bytes"
	"strings"
	"testing"
)

// An attachment a tool returned reaches the model in the message that
// carries the call's result (a tool message for native calls, the results
// message for text formats), survives encoding, counts towards the state's
// size, and shows in the core's text rendering.
func TestAttachmentsReachTheMessageLog(t *testing.T) {
	png := Attachment{MIME: "image/png", Data: []byte("\x89PNG-bytes")}
	wav := Attachment{MIME: "audio/wav", Data: []byte("RIFF-bytes")}
	for _, format := range []Format{FormatNative, FormatXML} {
		t.Run(string(format), func(t *testing.T) {
			cfg := testConfig()
			cfg.Format = format
			st := mustStart(t, cfg, "look")
			a := mustStep(t, cfg, st)
			reply := ModelReply{Calls: []NativeCall{call("c1", "search", `{"query":"a"}`), call("c2", "search", `{"query":"b"}`)}}
			if format == FormatXML {
				reply = ModelReply{Text: `<tool name="search" tag="c1">{"query":"a"}</tool><tool name="search" tag="c2">{"query":"b"}</tool>`}
			}
			st = mustResume(t, cfg, a.Next(), reply)
			a = mustStep(t, cfg, st)
			ids := a.(RequestToolCalls).Calls
			before := a.Next().Counters.Bytes
			st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{
				{CallID: ids[0].ID, Output: "[image/png content, 10 bytes]", Attachments: []Attachment{png}},
				{CallID: ids[1].ID, Output: "[audio/wav content, 10 bytes]", Attachments: []Attachment{wav}},
			}})
			var got [][]Attachment
			for _, m := range st.Messages {
				if len(m.Attachments) > 0 {
					got = append(got, m.Attachments)
				}
			}
			switch format {
			case FormatNative:
				if len(got) != 2 || got[0][0].MIME != "image/png" || got[1][0].MIME != "audio/wav" {
					t.Fatalf("tool messages carry %v", got)
				}
			default:
				if len(got) != 1 || len(got[0]) != 2 || !bytes.Equal(got[0][0].Data, png.Data) || !bytes.Equal(got[0][1].Data, wav.Data) {
					t.Fatalf("the results message carries %v", got)
				}
			}
			if grown := st.Counters.Bytes - before; grown < len(png.Data)+len(wav.Data) {
				t.Fatalf("the state grew by %d bytes, less than its attachments", grown)
			}
			b, err := EncodeState(st)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeState(b)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := EncodeState(back)
			if !bytes.Equal(b, again) {
				t.Fatal("a state with attachments does not round-trip")
			}
			last := DescribeMessage(st.Messages[len(st.Messages)-1])
			if !strings.Contains(last, "audio/wav 10 bytes]") {
				t.Fatalf("DescribeMessage = %s", last)
			}
		})
	}
}

// Sanitize keeps attachments (and cleans their media type) when it has to
// rebuild a result for invalid UTF-8.
func TestSanitizeKeepsAttachments(t *testing.T) {
	res := Sanitize(ToolResults{Results: []ToolResult{{CallID: "c", Output: "bad \xff", Attachments: []Attachment{{MIME: "image/\xffpng", Data: []byte{0xff, 0}}}}}})
	got := res.(ToolResults).Results[0]
	if len(got.Attachments) != 1 || got.Attachments[0].MIME != "image/\uFFFDpng" || !bytes.Equal(got.Attachments[0].Data, []byte{0xff, 0}) {
		t.Fatalf("sanitized = %+v", got)
	}
}
