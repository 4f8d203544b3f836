package tools

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults of FilesOptions.
const (
	DefaultMaxReadBytes  = 256 << 10
	DefaultMaxWriteBytes = 1 << 20
	DefaultMaxEntries    = 1000
)

// FilesOptions configures read_file, write_file and list_files. Zero values
// mean the defaults, except Root, which is required.
type FilesOptions struct {
	// Root is the directory the tools are confined to. Paths are relative
	// to it; absolute paths, ".." that leaves it and symlinks that lead
	// outside it are refused.
	Root string
	// MaxReadBytes is how much read_file returns per call
	// (0: DefaultMaxReadBytes); a longer file is read on with "offset".
	MaxReadBytes int
	// MaxWriteBytes is the largest content write_file accepts
	// (0: DefaultMaxWriteBytes).
	MaxWriteBytes int
	// MaxEntries is how many entries list_files shows (0: DefaultMaxEntries).
	MaxEntries int
}

func (o FilesOptions) withDefaults() FilesOptions {
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxWriteBytes <= 0 {
		o.MaxWriteBytes = DefaultMaxWriteBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	return o
}

func (o FilesOptions) validate() error {
	if o.Root == "" {
		return fmt.Errorf("files: root is required")
	}
	if o.MaxReadBytes < 0 || o.MaxWriteBytes < 0 || o.MaxEntries < 0 {
		return fmt.Errorf("files: limits must not be negative")
	}
	return nil
}

// Files returns read_file, write_file and list_files, in that order, all
// confined to opts.Root. A missing or unusable root is reported by every
// call. All three are idempotent (write_file replaces the whole file).
// They share the root directory, held open between calls (one descriptor,
// closed once the tools are dropped) and looked up again by its path on
// every call, so a root moved, removed or replaced is noticed at once. A
// relative root is made absolute at the first call, against the working
// directory then.
func Files(opts FilesOptions) []shell.Tool {
	o := opts.withDefaults()
	root := newRootDir(o.Root)
	return []shell.Tool{readFile{o, root}, writeFile{o, root}, listFiles{o, root}}
}
