package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultPageSize is the tool-list page size NewServer uses by default: small,
// so that listing every tool takes several pages.
const DefaultPageSize = 4

// Options configure NewServer; nil means the defaults.
type Options struct {
	// PageSize is how many tools one tools/list page holds (0: DefaultPageSize).
	PageSize int
	// Crash is what the crash tool does before it answers with a JSON-RPC
	// error: the binary exits the process there; an in-process test may
	// break the connection. Nil: only the error response.
	Crash func()
	// Release, when closed, lets a stuck call end (nil: never).
	Release <-chan struct{}
}

// PNG is the image the image tool returns: a 1x1 transparent PNG.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

// ToolNames lists every tool NewServer offers, in the order it lists them.
var ToolNames = []string{
	"add", "add_tool", "audio", "big_image", "cancellations", "crash", "echo", "fail", "getenv",
	"header", "image", "nested", "pid", "progress", "refs", "remove_tool", "resource", "roots",
	"sleep", "spawn", "structured", "stuck", "typed", "unsupported",
}

// EchoIn is the input of echo.
type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

// AddIn is the input of add.
type AddIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

// FailIn is the input of fail.
type FailIn struct {
	Message string `json:"message,omitempty" jsonschema:"the error to report"`
}

// SleepIn is the input of sleep.
type SleepIn struct {
	MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
}

// HeaderIn is the input of header.
type HeaderIn struct {
	Name string `json:"name" jsonschema:"the HTTP header to return"`
}

// GetenvIn is the input of getenv.
type GetenvIn struct {
	Name string `json:"name" jsonschema:"the environment variable to return"`
}

// NestedIn exercises the schemas the SDK generates: nested structs,
// pointers, slices and maps.
type NestedIn struct {
	Title  string            `json:"title" jsonschema:"a property named like an annotation keyword"`
	Point  Point             `json:"point"`
	Tags   []string          `json:"tags,omitempty"`
	Origin *Point            `json:"origin,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Limit  *int              `json:"limit,omitempty"`
}

// Point is part of NestedIn.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// RefsSchema is the input schema of refs: $ref and $defs as pydantic and
// zod emit them, with annotations stepwise drops.
const RefsSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "RefsArgs",
  "type": "object",
  "properties": {
    "owner": {"$ref": "#/$defs/Person", "description": "who owns it"},
    "members": {"type": "array", "items": {"$ref": "#/$defs/Person"}},
    "color": {"allOf": [{"$ref": "#/definitions/Color"}], "default": "red"}
  },
  "required": ["owner"],
  "additionalProperties": false,
  "$defs": {
    "Person": {
      "title": "Person",
      "type": "object",
      "properties": {
        "name": {"type": "string", "title": "Name", "examples": ["Ada"]},
        "email": {"type": ["string", "null"], "format": "email"}
      },
      "required": ["name"]
    }
  },
  "definitions": {
    "Color": {"type": "string", "enum": ["red", "green"], "title": "Color"}
  }
}`

// UnsupportedSchema is the input schema of unsupported: a keyword stepwise
// cannot check, so clients skip the tool.
const UnsupportedSchema = `{"type": "object", "properties": {"x": {"not": {"type": "string"}}}}`

// NewServer returns the test server with every tool in ToolNames.
func NewServer(opts *Options) *mcp.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "v0.0.1"}, &mcp.ServerOptions{PageSize: o.PageSize})
	f := addFeatures(s, o)

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its input text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in AddIn) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(in.A + in.B)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails (isError)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in FailIn) (*mcp.CallToolResult, any, error) {
			msg := in.Message
			if msg == "" {
				msg = "failed as asked"
			}
			res := text(msg)
			res.IsError = true
			return res, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleeps for ms milliseconds; a cancelled call stops at once."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in SleepIn) (*mcp.CallToolResult, any, error) {
			if err := f.sleepFor(ctx, time.Duration(in.MS)*time.Millisecond); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("slept %d ms", in.MS)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "header", Description: "Returns an HTTP header of the request."},
		func(_ context.Context, req *mcp.CallToolRequest, in HeaderIn) (*mcp.CallToolResult, any, error) {
			if req.Extra == nil || req.Extra.Header == nil {
				return text(""), nil, nil
			}
			return text(req.Extra.Header.Get(in.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Returns an environment variable of the server."},
		func(_ context.Context, _ *mcp.CallToolRequest, in GetenvIn) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Starts a background child (sleep 60) and returns its pid."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go cmd.Wait() //nolint:errcheck // reaps the child if the server outlives it
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "nested", Description: "Echoes nested arguments as JSON."},
		func(_ context.Context, _ *mcp.CallToolRequest, in NestedIn) (*mcp.CallToolResult, any, error) {
			b, err := json.Marshal(in)
			if err != nil {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})

	empty := json.RawMessage(`{"type": "object"}`)
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Crashes the server.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if o.Crash != nil {
				o.Crash()
			}
			return nil, errors.New("crashed")
		})
	s.AddTool(&mcp.Tool{Name: "image", Description: "Returns a PNG image.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a pixel:"},
				&mcp.ImageContent{Data: PNG, MIMEType: "image/png"},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "resource", Description: "Returns an embedded resource and a link.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "some notes"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///blob.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
				&mcp.ResourceLink{URI: "https://example.com/doc", Name: "doc"},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", Description: "Returns only structured content.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "refs", Description: "Echoes its arguments; its schema uses $ref.", InputSchema: json.RawMessage(RefsSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
	s.AddTool(&mcp.Tool{Name: "unsupported", Description: "Its schema uses not.", InputSchema: json.RawMessage(UnsupportedSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("unreachable"), nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
