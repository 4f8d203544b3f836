package openai

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/core"
)

// Media kinds a model may be declared to accept (Options.Accepts).
const (
	AcceptImage = "image"
	AcceptAudio = "audio"
)

// accepts is what media a model takes as input besides text.
type accepts struct{ image, audio bool }

func parseAccepts(kinds []string) (accepts, error) {
	var a accepts
	for _, k := range kinds {
		switch k {
		case AcceptImage:
			a.image = true
		case AcceptAudio:
			a.audio = true
		default:
			return a, fmt.Errorf("accepts %q: want %q or %q", k, AcceptImage, AcceptAudio)
		}
	}
	return a, nil
}

// imageTypes are the image formats chat completions read (as data URLs in
// image_url parts).
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// audioFormats maps the sound types chat completions read (input_audio
// parts) to the format it names them by.
var audioFormats = map[string]string{"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}

// parts are the content parts of the attachments the model accepts, in
// order; an attachment it does not accept, or of a type the API does not
// read, gets none (the message's text already has its placeholder).
func (a accepts) parts(list []core.Attachment) []goopenai.ChatMessagePart {
	var out []goopenai.ChatMessagePart
	for _, at := range list {
		mime := strings.ToLower(strings.TrimSpace(at.MIME))
		switch {
		case a.image && imageTypes[mime]:
			out = append(out, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL, ImageURL: &goopenai.ChatMessageImageURL{
				URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(at.Data),
			}})
		case a.audio && audioFormats[mime] != "":
			// go-openai has no input_audio part: this stand-in is rewritten
			// on the wire (see audioParts).
			out = append(out, goopenai.ChatMessagePart{Type: partInputAudio, Text: audioFormats[mime] + ":" + base64.StdEncoding.EncodeToString(at.Data)})
		}
	}
	return out
}

// partInputAudio is the type of an input_audio content part.
const partInputAudio goopenai.ChatMessagePartType = "input_audio"

// withParts makes m's content its text followed by parts.
func withParts(m goopenai.ChatCompletionMessage, parts []goopenai.ChatMessagePart) goopenai.ChatCompletionMessage {
	text := m.Content
	if text == "" {
		text = emptyContent
	}
	m.Content = ""
	m.MultiContent = append([]goopenai.ChatMessagePart{{Type: goopenai.ChatMessagePartTypeText, Text: text}}, parts...)
	return m
}

// toolMedia collects the accepted attachments of a run of tool messages:
// tool messages take text only, so they follow the run in a user message.
type toolMedia struct {
	parts []goopenai.ChatMessagePart
}

func (t *toolMedia) add(a accepts, m core.Message) {
	parts := a.parts(m.Attachments)
	if len(parts) == 0 {
		return
	}
	intro := fmt.Sprintf("The result of call %s (%s) holds:", m.CallID, m.Name)
	t.parts = append(append(t.parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: intro}), parts...)
}

// flush appends the user message of the collected parts, if any, to out.
func (t *toolMedia) flush(out []goopenai.ChatCompletionMessage) []goopenai.ChatCompletionMessage {
	if len(t.parts) == 0 {
		return out
	}
	out = append(out, goopenai.ChatCompletionMessage{Role: string(core.RoleUser), MultiContent: t.parts})
	t.parts = nil
	return out
}

// standInAudio is an input_audio stand-in part as go-openai encodes it.
var standInAudio = regexp.MustCompile(`\{"type":"input_audio","text":"(wav|mp3):([A-Za-z0-9+/=]*)"\}`)

// audioParts rewrites the input_audio stand-ins of a request body into the
// parts the API reads, {"type":"input_audio","input_audio":{"data","format"}},
// then hands the request on.
type audioParts struct{ next goopenai.HTTPDoer }

func (d audioParts) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.GetBody == nil {
		return d.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	if bytes.Contains(body, []byte(`"type":"input_audio"`)) {
		body = standInAudio.ReplaceAll(body, []byte(`{"type":"input_audio","input_audio":{"data":"$2","format":"$1"}}`))
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	return d.next.Do(req)
}
