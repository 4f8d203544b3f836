package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

type listFiles struct {
	opts FilesOptions
	root *rootDir
}

func (t listFiles) Spec() core.Tool {
	return core.Tool{
		Name: "list_files",
		Description: fmt.Sprintf("List a directory under the working root, sorted by name: directories end in \"/\", files show their size, symlinks their target. "+
			"Paths shown are relative to the root. At most %d entries.", t.opts.MaxEntries),
		Parameters: objectSchema([]prop{
			{"path", map[string]any{"type": "string", "default": ".", "description": "directory relative to the root; \".\" is the root"}},
			{"recursive", map[string]any{"type": "boolean", "default": false, "description": "also list subdirectories, depth first"}},
		}),
		Idempotent: true,
	}
}

type listFilesArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// errListFull stops a walk once the listing is full.
var errListFull = errors.New("listing full")

func (t listFiles) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	a := listFilesArgs{Path: "."}
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	c, err := t.root.open()
	if err != nil {
		return failf(call, "%v", err)
	}
	rel, err := c.resolve(a.Path)
	if err != nil {
		return failf(call, "%v", err)
	}
	fi, err := c.root.Stat(rel)
	if err != nil {
		return failf(call, "%s: %v", a.Path, errText(err))
	}
	if !fi.IsDir() {
		return failf(call, "%s is not a directory; use read_file to read a file", a.Path)
	}

	top := path.Clean(filepath.ToSlash(rel))
	var lines []string
	full := false
	walkErr := fs.WalkDir(c.root.FS(), top, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == top {
			return err // nil, or the directory itself is unreadable
		}
		if err != nil { // a subdirectory that cannot be read: note it on its line
			line := fmt.Sprintf("%s/ (unreadable: %v)", p, errText(err))
			if n := len(lines); n > 0 && lines[n-1] == p+"/" {
				lines[n-1] = line
			} else {
				lines = append(lines, line)
			}
			return fs.SkipDir
		}
		if len(lines) == t.opts.MaxEntries {
			full = true
			return errListFull
		}
		lines = append(lines, describeEntry(c, p, d))
		if d.IsDir() && !a.Recursive {
			return fs.SkipDir
		}
		return nil
	})
	switch {
	case ctx.Err() != nil:
		return interrupted(call, ctx.Err())
	case walkErr != nil && walkErr != errListFull:
		return failf(call, "%s: %v", a.Path, errText(walkErr))
	}
	out := strings.Join(lines, "\n")
	switch {
	case len(lines) == 0:
		out = "(empty directory)"
	case full:
		out += fmt.Sprintf("\n[... cut at %d entries; list a subdirectory to see more]", t.opts.MaxEntries)
	}
	return core.ToolResult{CallID: call.ID, Output: out}
}

// describeEntry renders one entry: "dir/", "file (N bytes)", "link -> target".
func describeEntry(c *confined, p string, d fs.DirEntry) string {
	switch {
	case d.IsDir():
		return p + "/"
	case d.Type()&fs.ModeSymlink != 0:
		target, err := c.root.Readlink(p)
		if err != nil {
			return p + " -> ?"
		}
		return p + " -> " + target
	case d.Type().IsRegular():
		info, err := d.Info()
		if err != nil {
			return p
		}
		return fmt.Sprintf("%s (%d bytes)", p, info.Size())
	}
	return p + " (special file)"
}
