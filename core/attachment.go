package core

import (
	"fmt"
	"strings"
)

// Attachment is binary content a tool returned for the model to see, such
// as an image or a sound: its media type (for example "image/png") and its
// bytes. It travels with the call's ToolResult into the message that hands
// the result to the model. Whether the model receives the bytes is the
// provider's business (a model that does not accept them reads the text
// placeholder the tool put in its output); the core only carries them.
type Attachment struct {
	MIME string `cbor:"1,keyasint,omitempty" json:"mime"`
	Data []byte `cbor:"2,keyasint,omitempty" json:"data"`
}

// describeAttachments renders attachments as " [image/png 67 bytes, ...]",
// or "" when there are none.
func describeAttachments(list []Attachment) string {
	if len(list) == 0 {
		return ""
	}
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = fmt.Sprintf("%s %d bytes", a.MIME, len(a.Data))
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

// attachmentsOf gathers the attachments of results, in their order.
func attachmentsOf(results []ToolResult) []Attachment {
	var out []Attachment
	for _, r := range results {
		out = append(out, r.Attachments...)
	}
	return out
}

func cleanAttachments(list []Attachment) []Attachment {
	if list == nil {
		return nil
	}
	out := make([]Attachment, len(list))
	for i, a := range list {
		out[i] = Attachment{MIME: clean(a.MIME), Data: a.Data}
	}
	return out
}
