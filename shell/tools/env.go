package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// minimalPath is the PATH a child process gets unless PATH is passed through.
const minimalPath = "/usr/local/bin:/usr/bin:/bin"

// childEnv builds a child's environment from scratch: base (NAME=value,
// in order), then each entry of pass, which is either NAME (the parent's
// value, skipped when the parent has none) or NAME=value (a fixed value). A
// later entry replaces an earlier one with the same name. Nothing else of
// the parent's environment is inherited.
func childEnv(base []string, pass []string) []string {
	var names []string
	vals := map[string]string{}
	set := func(name, val string) {
		if _, ok := vals[name]; !ok {
			names = append(names, name)
		}
		vals[name] = val
	}
	for _, kv := range base {
		name, val, _ := strings.Cut(kv, "=")
		set(name, val)
	}
	for _, p := range pass {
		if name, val, ok := strings.Cut(p, "="); ok {
			set(name, val)
		} else if val, ok := os.LookupEnv(p); ok {
			set(p, val)
		}
	}
	env := make([]string, 0, len(names))
	for _, n := range names {
		env = append(env, n+"="+vals[n])
	}
	return env
}

// checkEnvNames reports entries of pass that are not NAME or NAME=value.
func checkEnvNames(pass []string) error {
	for _, p := range pass {
		name, _, _ := strings.Cut(p, "=")
		if !validEnvName(name) {
			return fmt.Errorf("env entry %q: want NAME or NAME=value, NAME made of letters, digits and '_'", p)
		}
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// pathWith returns minimalPath led by dir (the directory of the program
// being run, so that it finds its siblings), without repeats.
func pathWith(program string) string {
	dirs := strings.Split(minimalPath, ":")
	if d := filepath.Dir(program); filepath.IsAbs(d) && !slices.Contains(dirs, d) {
		dirs = append([]string{d}, dirs...)
	}
	return strings.Join(dirs, ":")
}
