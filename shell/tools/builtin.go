package tools

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/shell"
)

// Options configures the built-ins; Builtin reads the part a name needs.
type Options struct {
	RunCode   RunCodeOptions
	Files     FilesOptions
	HTTPGet   HTTPGetOptions
	WebSearch WebSearchOptions
	SQLQuery  SQLQueryOptions
	Image     ImageOptions
	Stats     SystemStatsOptions
}

// GroupFiles names read_file, write_file and list_files together.
const GroupFiles = "files"

// builtinNames are the built-in tool names, sorted.
var builtinNames = []string{"generate_image", "http_get", "list_files", "read_file", "run_code", "sql_query", "system_stats", "web_search", "write_file"}

// Builtins returns the names of the built-in tools, sorted. (Builtin also
// accepts GroupFiles.)
func Builtins() []string { return append([]string(nil), builtinNames...) }

// ErrUnknownBuiltin is returned by Builtin for a name it does not know.
var ErrUnknownBuiltin = errors.New("unknown built-in tool")

// Builtin returns the built-in tool called name (or the three file tools for
// GroupFiles), configured from the matching part of o. Options that make
// the tool unusable (a missing root, path or allow-list, an unknown
// language or backend) are errors here rather than at every call.
func Builtin(name string, o Options) ([]shell.Tool, error) {
	var err error
	switch name {
	case "run_code":
		if err = o.RunCode.validate(); err == nil {
			return []shell.Tool{RunCode(o.RunCode)}, nil
		}
	case "read_file", "write_file", "list_files", GroupFiles:
		if err = o.Files.validate(); err == nil {
			all := Files(o.Files)
			if name == GroupFiles {
				return all, nil
			}
			for _, t := range all {
				if t.Spec().Name == name {
					return []shell.Tool{t}, nil
				}
			}
		}
	case "http_get":
		if err = o.HTTPGet.validate(); err == nil {
			return []shell.Tool{HTTPGet(o.HTTPGet)}, nil
		}
	case "web_search":
		if err = o.WebSearch.validate(); err == nil {
			return []shell.Tool{WebSearch(o.WebSearch)}, nil
		}
	case "sql_query":
		if err = o.SQLQuery.validate(); err == nil {
			return []shell.Tool{SQLQuery(o.SQLQuery)}, nil
		}
	case "generate_image":
		if err = o.Image.validate(); err == nil {
			return []shell.Tool{GenerateImage(o.Image)}, nil
		}
	case "system_stats":
		return []shell.Tool{SystemStats(o.Stats)}, nil
	default:
		return nil, fmt.Errorf("%w %q; the built-ins are %s (and %q for the three file tools)",
			ErrUnknownBuiltin, name, strings.Join(builtinNames, ", "), GroupFiles)
	}
	return nil, err
}
