package mcptest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of this file exercise what mature MCP clients do: cancellation,
// progress, tool-list changes, roots, structured output and media.

// WAV is the sound the audio tool returns: a WAV file of 4 silent samples.
var WAV = wavFile(4)

// TypedSchema is the output schema of typed.
const TypedSchema = `{"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}`

// ProgressIn is the input of progress.
type ProgressIn struct {
	Steps int `json:"steps" jsonschema:"how many progress notifications to send"`
	// WaitFor makes the call wait, once it has sent its notifications,
	// until this file exists (or the call is cancelled).
	WaitFor string `json:"wait_for,omitempty" jsonschema:"a file to wait for before answering"`
}

// TypedIn is the input of typed.
type TypedIn struct {
	Mode string `json:"mode,omitempty" jsonschema:"ok (the default), wrong (structured content that does not fit the output schema) or none (no structured content)"`
}

// ToolIn names a tool, for add_tool and remove_tool.
type ToolIn struct {
	Name string `json:"name" jsonschema:"the tool's name"`
}

// BigImageIn is the input of big_image.
type BigImageIn struct {
	Bytes int `json:"bytes" jsonschema:"the image's size in bytes"`
}

// features holds the state the feature tools share.
type features struct {
	// cancelled counts calls of sleep that ended because the client
	// cancelled them.
	cancelled atomic.Int32
	// wedge, once closed by stuck, holds every later request until its
	// context ends, as a server whose one thread is stuck does.
	wedgeOnce sync.Once
	wedge     chan struct{}
	// release ends stuck's wait (never, unless Options.Release says so).
	release <-chan struct{}
}

// addFeatures adds the tools of this file to s.
func addFeatures(s *mcp.Server, o Options) *features {
	f := &features{wedge: make(chan struct{}), release: o.Release}
	s.AddReceivingMiddleware(f.wedged)

	mcp.AddTool(s, &mcp.Tool{Name: "cancellations", Description: "Returns how many sleep calls the client cancelled."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(int(f.cancelled.Load()))), nil, nil
		})
	empty := json.RawMessage(`{"type": "object"}`)
	s.AddTool(&mcp.Tool{Name: "stuck", Description: "Ignores cancellation and stops the server answering anything else.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.wedgeOnce.Do(func() { close(f.wedge) })
			<-f.release
			return text("released"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Sends steps progress notifications, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in ProgressIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return text("no progress token"), nil, nil
			}
			for i := 1; i <= in.Steps; i++ {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d of %d", i, in.Steps),
				})
				if err != nil {
					return nil, nil, err
				}
			}
			if in.WaitFor != "" {
				if err := waitForFile(ctx, in.WaitFor); err != nil {
					return nil, nil, err
				}
			}
			return text(fmt.Sprintf("sent %d progress notifications", in.Steps)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool NAME that echoes its text (the tool list changes)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in ToolIn) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: in.Name, Description: "Added while running; returns its input text."},
				func(_ context.Context, _ *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
					return text(in.Text), nil, nil
				})
			return text("added " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "remove_tool", Description: "Removes the tool NAME (the tool list changes)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in ToolIn) (*mcp.CallToolResult, any, error) {
			s.RemoveTools(in.Name)
			return text("removed " + in.Name), nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "roots", Description: "Returns the client's roots, one URI a line.", InputSchema: empty}, f.roots)
	s.AddTool(&mcp.Tool{Name: "typed", Description: "Returns structured content under an output schema.",
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {"mode": {"type": "string", "enum": ["ok", "wrong", "none"]}}}`),
		OutputSchema: json.RawMessage(TypedSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in TypedIn
			_ = json.Unmarshal(req.Params.Arguments, &in)
			switch in.Mode {
			case "wrong":
				return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"answer": "forty-two"}}, nil
			case "none":
				return text("no structure"), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "audio", Description: "Returns a WAV sound.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: WAV, MIMEType: "audio/wav"}}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big_image", Description: "Returns a PNG-typed image of the given size."},
		func(_ context.Context, _ *mcp.CallToolRequest, in BigImageIn) (*mcp.CallToolResult, any, error) {
			data := make([]byte, max(in.Bytes, len(PNG)))
			copy(data, PNG)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: "image/png"}}}, nil, nil
		})
	return f
}

// wedged holds every request that arrives once stuck ran, until its context
// ends (the client gives up on it, or the connection closes).
func (f *features) wedged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		select {
		case <-f.wedge:
			if !strings.HasPrefix(method, "notifications/") {
				<-ctx.Done()
				return nil, ctx.Err()
			}
		default:
		}
		return next(ctx, method, req)
	}
}

// roots asks the client for its roots (a multi round-trip input request,
// which the SDK turns into roots/list for clients of older protocols).
func (f *features) roots(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
		return text("the client declares no roots capability"), nil
	}
	resp, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
	if !ok {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil
	}
	if len(resp.Roots) == 0 {
		return text("the client declares roots but has none"), nil
	}
	uris := make([]string, len(resp.Roots))
	for i, r := range resp.Roots {
		uris[i] = r.URI
	}
	return text(strings.Join(uris, "\n")), nil
}

// wavFile is a 16-bit mono 8 kHz WAV file of n silent samples.
func wavFile(n int) []byte {
	data := 2 * n
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, uint32(36+data))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, 8000)
	b = binary.LittleEndian.AppendUint32(b, 16000)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(data))
	return append(b, make([]byte, data)...)
}

// waitForFile waits until path exists, or ctx ends.
func waitForFile(ctx context.Context, path string) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// sleepFor sleeps for d, or until ctx ends (the client cancelled the call),
// which it counts.
func (f *features) sleepFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		f.cancelled.Add(1)
		return ctx.Err()
	}
}
