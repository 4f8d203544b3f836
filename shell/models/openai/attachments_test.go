package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

var (
	png = core.Attachment{MIME: "image/png", Data: []byte("\x89PNG\r\n\x1a\n-pixels")}
	wav = core.Attachment{MIME: "audio/wav", Data: []byte("RIFF----WAVEfmt -samples")}
	bmp = core.Attachment{MIME: "image/bmp", Data: []byte("BM-bitmap")}
)

// mediaRequest is a conversation with attachments: on a user message (as
// text formats carry results), and on tool messages.
func mediaRequest(withAttachments bool) shell.ModelRequest {
	att := func(list ...core.Attachment) []core.Attachment {
		if withAttachments {
			return list
		}
		return nil
	}
	return shell.ModelRequest{Messages: []core.Message{
		{Role: core.RoleSystem, Content: "sys"},
		{Role: core.RoleUser, Content: "[image/png content, 15 bytes]", Attachments: att(png)},
		{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "c1", Name: "shot"}, {ID: "c2", Name: "rec"}}},
		{Role: core.RoleTool, CallID: "c1", Name: "shot", Content: "[image/png content, 15 bytes]\n[image/bmp content, 9 bytes]", Attachments: att(png, bmp)},
		{Role: core.RoleTool, CallID: "c2", Name: "rec", Content: "[audio/wav content, 24 bytes]", Attachments: att(wav)},
		{Role: core.RoleAssistant, Content: "Seen.", Calls: []core.ToolCall{{ID: "c3", Name: "shot"}}},
		{Role: core.RoleTool, CallID: "c3", Name: "shot", Content: "[image/png content, 15 bytes]", Attachments: att(png)},
	}}
}

// part is one content part as it arrived.
type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
}

func partsOf(t *testing.T, m map[string]json.RawMessage) []part {
	t.Helper()
	var ps []part
	if err := json.Unmarshal(m["content"], &ps); err != nil {
		t.Fatalf("content is not a list of parts: %s", m["content"])
	}
	return ps
}

func dataURL(a core.Attachment) string {
	return "data:" + a.MIME + ";base64," + base64.StdEncoding.EncodeToString(a.Data)
}

// A model declared to accept images and sound gets them as content parts
// (tool messages take text only, so theirs follow in a user message); an
// attachment of a type the API does not read stays its placeholder.
func TestAttachmentsSentToAModelThatAcceptsThem(t *testing.T) {
	srv := newFakeServer(t, status(http.StatusServiceUnavailable, overloadError), ok(textCompletion))
	p, _ := newProvider(t, Options{BaseURL: srv.base(), Accepts: []string{AcceptImage, AcceptAudio}})
	if _, err := p.Complete(context.Background(), mediaRequest(true)); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	reqs := srv.recorded()
	if len(reqs) != 2 || !bytes.Equal(reqs[0].raw, reqs[1].raw) {
		t.Fatalf("%d requests; a retry must send the same body", len(reqs))
	}
	msgs := reqs[1].body.Messages
	if len(msgs) != 9 {
		t.Fatalf("%d messages, want 9 (each run of tool messages followed by its media):\n%s", len(msgs), reqs[1].raw)
	}
	user := partsOf(t, msgs[1])
	if len(user) != 2 || user[0].Type != "text" || user[0].Text != "[image/png content, 15 bytes]" || user[1].Type != "image_url" || user[1].ImageURL.URL != dataURL(png) {
		t.Errorf("user message parts = %+v", user)
	}
	for _, i := range []int{3, 4} {
		if roleOf(t, msgs[i]) != "tool" || !strings.HasPrefix(string(msgs[i]["content"]), `"`) {
			t.Errorf("message %d = %s, want a tool message with text content", i, msgs[i]["content"])
		}
	}
	media := partsOf(t, msgs[5])
	if roleOf(t, msgs[5]) != "user" || len(media) != 4 ||
		media[0].Text != "The result of call c1 (shot) holds:" || media[1].ImageURL == nil || media[1].ImageURL.URL != dataURL(png) ||
		media[2].Text != "The result of call c2 (rec) holds:" || media[3].Type != "input_audio" || media[3].InputAudio == nil ||
		media[3].InputAudio.Format != "wav" || media[3].InputAudio.Data != base64.StdEncoding.EncodeToString(wav.Data) {
		t.Errorf("media message = %s", msgs[5]["content"])
	}
	if roleOf(t, msgs[6]) != "assistant" || roleOf(t, msgs[7]) != "tool" {
		t.Errorf("messages 6 and 7 = %v, %v", msgs[6], msgs[7])
	}
	if last := partsOf(t, msgs[8]); roleOf(t, msgs[8]) != "user" || len(last) != 2 || last[0].Text != "The result of call c3 (shot) holds:" || last[1].ImageURL == nil {
		t.Errorf("last message = %s", msgs[8]["content"])
	}
}

// A model not declared to accept media gets exactly today's request: the
// placeholders, byte for byte as without attachments; one that accepts
// images only gets no sound.
func TestAttachmentsWithheldFromAModelThatDoesNotAcceptThem(t *testing.T) {
	send := func(accepts []string, withAttachments bool) recorded {
		srv := newFakeServer(t, ok(textCompletion))
		p, _ := newProvider(t, Options{BaseURL: srv.base(), Accepts: accepts})
		if _, err := p.Complete(context.Background(), mediaRequest(withAttachments)); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		return srv.recorded()[0]
	}
	if with, without := send(nil, true), send(nil, false); !bytes.Equal(with.raw, without.raw) {
		t.Fatalf("attachments changed the request of a model that accepts none:\n%s\n%s", with.raw, without.raw)
	}
	imagesOnly := send([]string{AcceptImage}, true).body.Messages
	media := partsOf(t, imagesOnly[5])
	if len(media) != 2 || media[1].ImageURL == nil || strings.Contains(string(imagesOnly[5]["content"]), "input_audio") {
		t.Fatalf("media for a model that accepts images only = %s", imagesOnly[5]["content"])
	}
	if _, err := New(Options{Model: "m", Accepts: []string{"video"}}); err == nil || !strings.Contains(err.Error(), `accepts "video"`) {
		t.Fatalf("New with accepts video: %v", err)
	}
}
