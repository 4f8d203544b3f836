package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"unicode/utf8"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

type readFile struct {
	opts FilesOptions
	root *rootDir
}

func (t readFile) Spec() core.Tool {
	return core.Tool{
		Name: "read_file",
		Description: fmt.Sprintf("Read a text file. Paths are relative to the working root; absolute paths and paths outside it are refused. "+
			"At most %d bytes are returned per call; read on from \"offset\" when the result says it was cut.", t.opts.MaxReadBytes),
		Parameters: objectSchema([]prop{
			{"path", str("file path relative to the root, e.g. \"src/main.py\"")},
			{"offset", map[string]any{"type": "integer", "minimum": 0, "default": 0, "description": "byte offset to start reading at"}},
		}, "path"),
		Idempotent: true,
	}
}

type readFileArgs struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
}

func (t readFile) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	var a readFileArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	if a.Offset < 0 {
		return failf(call, "offset must not be negative")
	}
	if err := ctx.Err(); err != nil {
		return interrupted(call, err)
	}
	c, err := t.root.open()
	if err != nil {
		return failf(call, "%v", err)
	}
	f := c.openLocal(a.Path)
	if f == nil {
		rel, err := c.resolve(a.Path)
		if err != nil {
			return failf(call, "%v", err)
		}
		if f, err = c.open(rel); err != nil {
			return failf(call, "%s: %v", a.Path, errText(err))
		}
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return failf(call, "%s: %v", a.Path, errText(err))
	case fi.IsDir():
		return failf(call, "%s is a directory; use list_files to see what it holds", a.Path)
	case !fi.Mode().IsRegular():
		return failf(call, "%s is not a regular file", a.Path)
	case a.Offset > fi.Size():
		return failf(call, "offset %d is past the end of %s (%d bytes)", a.Offset, a.Path, fi.Size())
	}
	buf := make([]byte, min(int64(t.opts.MaxReadBytes), fi.Size()-a.Offset))
	n, err := f.ReadAt(buf, a.Offset)
	if err != nil && err != io.EOF {
		return failf(call, "%s: %v", a.Path, errText(err))
	}
	text := buf[:n]
	start := a.Offset
	for i := 0; i < utf8.UTFMax-1 && start > 0 && len(text) > 0 && !utf8.RuneStart(text[0]); i++ {
		text, start = text[1:], start+1 // an offset inside a character: start at the next one
	}
	if a.Offset+int64(n) < fi.Size() {
		text = trimPartialRune(text) // the cut splits a character: end before it
	}
	end := start + int64(len(text))
	if bytes.IndexByte(text, 0) >= 0 || !utf8.Valid(text) {
		return failf(call, "%s is not a UTF-8 text file (%d bytes); read_file returns text only", a.Path, fi.Size())
	}
	out := string(text)
	switch {
	case fi.Size() == 0:
		out = "(empty file)"
	case end < fi.Size():
		out += fmt.Sprintf("\n[... cut: bytes %d-%d of %d shown; call read_file with offset %d to read on]", start, end, fi.Size(), end)
	}
	return core.ToolResult{CallID: call.ID, Output: out, Sources: []string{filepath.ToSlash(filepath.Clean(a.Path))}}
}
