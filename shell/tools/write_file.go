package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

type writeFile struct {
	opts FilesOptions
	root *rootDir
}

func (t writeFile) Spec() core.Tool {
	return core.Tool{
		Name: "write_file",
		Description: fmt.Sprintf("Write a text file, replacing it if it exists. Paths are relative to the working root; absolute paths and paths outside it are refused. "+
			"The parent directory must exist unless create_dirs is true. At most %d bytes.", t.opts.MaxWriteBytes),
		Parameters: objectSchema([]prop{
			{"path", str("file path relative to the root, e.g. \"out/report.md\"")},
			{"content", str("the complete new content of the file")},
			{"create_dirs", map[string]any{"type": "boolean", "default": false, "description": "create missing parent directories"}},
		}, "path", "content"),
		Idempotent: true,
	}
}

type writeFileArgs struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	CreateDirs bool   `json:"create_dirs"`
}

func (t writeFile) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	var a writeFileArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	if len(a.Content) > t.opts.MaxWriteBytes {
		return failf(call, "content is %d bytes; the limit is %d", len(a.Content), t.opts.MaxWriteBytes)
	}
	if err := ctx.Err(); err != nil {
		return interrupted(call, err)
	}
	c, err := t.root.open()
	if err != nil {
		return failf(call, "%v", err)
	}
	rel, err := c.resolve(a.Path)
	if err != nil {
		return failf(call, "%v", err)
	}
	if rel == "." {
		return failf(call, "%q is the root directory, not a file", a.Path)
	}
	dir := filepath.Dir(rel)
	if a.CreateDirs {
		if err := c.root.MkdirAll(dir, 0o755); err != nil {
			return failf(call, "cannot create the directory of %s: %v", a.Path, errText(err))
		}
	} else if fi, err := c.root.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return failf(call, "the directory of %s does not exist; set create_dirs to true to create it", a.Path)
	} else if err != nil {
		return failf(call, "%s: %v", a.Path, errText(err))
	} else if !fi.IsDir() {
		return failf(call, "the parent of %s is not a directory", a.Path)
	}
	if fi, err := c.root.Stat(rel); err == nil && !fi.Mode().IsRegular() {
		return failf(call, "%s exists and is not a regular file", a.Path)
	}
	if err := c.root.WriteFile(rel, []byte(a.Content), 0o644); err != nil {
		return failf(call, "%s: %v", a.Path, errText(err))
	}
	return core.ToolResult{CallID: call.ID, Output: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), filepath.ToSlash(filepath.Clean(a.Path)))}
}
