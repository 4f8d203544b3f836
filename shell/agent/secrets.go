package agent

import (
	"maps"
	"os"
	"regexp"
	"slices"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/tools"
)

// envName is a variable name a tool's secrets may list.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretNames lists the variables f names as secret, each once, in the
// order of the file: every model's api_key_env (roles sorted),
// web_search's api_key_env (BRAVE_API_KEY by default for the brave
// backend), a tool's secrets, and every variable an [[mcp]] table's
// headers or env values reference (keys sorted). A variable only listed in
// a tool's env is not a secret.
func secretNames(f File) []string {
	var names []string
	add := func(ns ...string) {
		for _, n := range ns {
			if n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, role := range slices.Sorted(maps.Keys(f.Models)) {
		add(f.Models[role].APIKeyEnv)
	}
	for _, t := range f.Tools {
		if t.Builtin == "web_search" {
			key := t.APIKeyEnv
			if key == "" && t.Backend == tools.BackendBrave {
				key = tools.DefaultBraveAPIKeyEnv
			}
			add(key)
		}
		add(t.Secrets...)
	}
	for _, m := range f.MCP {
		for _, vals := range []map[string]string{m.Headers, m.Env} {
			for _, k := range slices.Sorted(maps.Keys(vals)) {
				add(referenced(vals[k])...)
			}
		}
	}
	return names
}

// referenced lists the variables v names as $VAR or ${VAR}, as expandAll
// expands them.
func referenced(v string) []string {
	var names []string
	os.Expand(v, func(name string) string {
		names = append(names, name)
		return ""
	})
	return names
}

// secrets reads the agent's secret variables; unset and empty ones are
// left out.
func (s *Spec) secrets() []shell.Secret {
	var out []shell.Secret
	for _, name := range s.SecretNames {
		if v := os.Getenv(name); v != "" {
			out = append(out, shell.Secret{Name: name, Value: v})
		}
	}
	return out
}
