package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// agentName is what an agent's name may look like: a file name without
// path separators, dots only inside.
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$`)

// agents loads agent files from the server's directory by name (never a
// path from a request), and builds the agents runs are driven by, from the
// sources the runs recorded; built agents (with their MCP servers) are kept
// until Close.
type agents struct {
	dir   string
	mu    sync.Mutex
	built map[[sha256.Size]byte]*shell.Agent
	// sources maps a recorded source's digest to what it built; files,
	// an agent file's path and content.
	sources, files map[[sha256.Size]byte]builtSource
	// seen is, by name, the file an agent was last loaded from, as a stat
	// saw it before the read: while the name still leads to that file,
	// unchanged, it is not resolved, read and hashed again.
	seen map[string]seenFile
}

// seenFile is an agent file as loaded: what os.Stat said before it was
// read, and what it built.
type seenFile struct {
	fi os.FileInfo
	builtSource
}

// same reports whether fi, a later stat of the same name, is the file as
// it was: the same file (device and inode), size, modification time and
// change time (a rename, as when the file moved to another directory,
// moves it: its relative paths would mean other files).
func (f seenFile) same(fi os.FileInfo) bool {
	return os.SameFile(f.fi, fi) && f.fi.Size() == fi.Size() && f.fi.ModTime().Equal(fi.ModTime()) &&
		changeTime(f.fi) == changeTime(fi) && fi.Mode().IsRegular()
}

func newAgents(dir string) (*agents, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("agents directory: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("agents directory %s: not a directory", dir)
	}
	return &agents{dir: abs, built: map[[sha256.Size]byte]*shell.Agent{}, sources: map[[sha256.Size]byte]builtSource{},
		files: map[[sha256.Size]byte]builtSource{}, seen: map[string]seenFile{}}, nil
}

// path is the file of the agent called name, inside the directory: a name
// with a separator or "..", or a file that resolves (through symlinks) to
// outside the directory, is refused.
func (a *agents) path(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	p := filepath.Join(a.dir, name+".toml")
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", errorf(http.StatusNotFound, codeUnknownAgent, "no agent %q in the agents directory", name)
	}
	rel, err := filepath.Rel(a.dir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", errorf(http.StatusNotFound, codeUnknownAgent, "no agent %q in the agents directory", name)
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return "", errorf(http.StatusNotFound, codeUnknownAgent, "no agent %q in the agents directory", name)
	}
	return real, nil
}

// checkName refuses a name that is not an agent's: letters, digits, '_',
// '-' and inner dots, at most 64 of them, no path.
func checkName(name string) error {
	if len(name) > 64 || !agentName.MatchString(name) {
		return errorf(http.StatusBadRequest, codeUnknownAgent, "agent %q: a name is letters, digits, '_', '-' and inner dots, no path", name)
	}
	return nil
}

// byName builds the agent called name, once per content of its file (a
// changed file is loaded again).
func (a *agents) byName(name string) (*shell.Agent, *agent.Spec, error) {
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	// One stat tells whether the file is the one loaded last time (seen
	// holds only names path accepted).
	fi, statErr := os.Stat(filepath.Join(a.dir, name+".toml"))
	if statErr == nil {
		a.mu.Lock()
		f, ok := a.seen[name]
		a.mu.Unlock()
		if ok && f.same(fi) {
			return f.ag, f.spec, nil
		}
	}
	p, err := a.path(name)
	if err != nil {
		return nil, nil, err
	}
	data, err := agent.ReadFile(p)
	if errors.Is(err, agent.ErrTooLarge) {
		return nil, nil, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "%v", err)
	}
	if err != nil {
		return nil, nil, errorf(http.StatusNotFound, codeUnknownAgent, "no agent %q in the agents directory", name)
	}
	key := sha256.Sum256(append([]byte(p+"\x00"), data...))
	// Remembered as the stat before the read saw the file: a change
	// made since shows at the next stat, and the file is read again.
	remember := func(e builtSource) {
		if statErr == nil {
			a.mu.Lock()
			a.seen[name] = seenFile{fi, e}
			a.mu.Unlock()
		}
	}
	a.mu.Lock()
	e, ok := a.files[key]
	a.mu.Unlock()
	if ok {
		remember(e)
		return e.ag, e.spec, nil
	}
	spec, err := agent.Parse(data, p, filepath.Dir(p))
	if err != nil {
		return nil, nil, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "%v", err)
	}
	spec.Path = p
	ag, err := a.build(spec, agent.BuildOptions{})
	if err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	a.files[key] = builtSource{ag, spec}
	a.mu.Unlock()
	remember(builtSource{ag, spec})
	return ag, spec, nil
}

// bySource builds the agent a run recorded (its Config), once per distinct
// source: a worker drives runs by it at every turn of a pause.
func (a *agents) bySource(src []byte) (*shell.Agent, *agent.Spec, error) {
	key := sha256.Sum256(src)
	a.mu.Lock()
	e, ok := a.sources[key]
	a.mu.Unlock()
	if ok {
		return e.ag, e.spec, nil
	}
	spec, opts, err := agent.FromSource(src)
	if err != nil {
		return nil, nil, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "%v", err)
	}
	ag, err := a.build(spec, opts)
	if err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	a.sources[key] = builtSource{ag, spec}
	a.mu.Unlock()
	return ag, spec, nil
}

// builtSource is an agent built from a run's recorded source.
type builtSource struct {
	ag   *shell.Agent
	spec *agent.Spec
}

// buildTimeout bounds how long building an agent may wait for its MCP
// servers to start and list their tools.
const buildTimeout = 2 * time.Minute

// build builds spec once per distinct source.
func (a *agents) build(spec *agent.Spec, opts agent.BuildOptions) (*shell.Agent, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := sha256.Sum256(spec.Source(opts))
	if ag, ok := a.built[key]; ok {
		return ag, nil
	}
	// Built once and shared by every later request: no one request's
	// context bounds it, the server's limit does.
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	ag, err := spec.Build(ctx, opts)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, codeInvalidAgent, "%v", err)
	}
	a.built[key] = ag
	return ag, nil
}

// names lists the agents in the directory.
func (a *agents) names() []string {
	files, _ := filepath.Glob(filepath.Join(a.dir, "*.toml"))
	var out []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".toml")
		if _, err := a.path(name); err == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// close shuts down what the built agents hold (MCP servers).
func (a *agents) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, ag := range a.built {
		if ag.Close != nil {
			_ = ag.Close()
		}
		delete(a.built, k)
	}
	clear(a.sources)
	clear(a.files)
	clear(a.seen)
}
