package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Record is what a run records of its MCP tools, so that it can bind them
// again later without listing (see Manager.Bind): the tools' specs, the
// output schema of each tool that declares one, and the servers that were
// unavailable, with why.
type Record struct {
	Tools         []core.Tool
	OutputSchemas map[string]json.RawMessage // by tool name (NAME__TOOL)
	Unavailable   map[string]string          // by server name
}

// Version grows whenever the tool list changes: a server said its list
// changed and listing it again gave another one, or an optional server was
// given up. Record and Current describe the list as it is now.
func (m *Manager) Version() uint64 { return m.version.Load() }

// Current returns the tools of every server as they are now (as listed, or
// bound, and changed since), servers in config order; a server given up
// has none.
func (m *Manager) Current() []shell.Tool {
	var out []shell.Tool
	for _, s := range m.servers {
		s.mu.Lock()
		if s.dead == nil {
			for _, t := range s.listed {
				out = append(out, t)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// Record describes Current, and the servers given up, for a run to record.
func (m *Manager) Record() Record {
	rec := Record{OutputSchemas: map[string]json.RawMessage{}, Unavailable: map[string]string{}}
	for _, t := range m.Current() {
		mt := t.(*tool)
		rec.Tools = append(rec.Tools, mt.spec)
		if mt.outRaw != nil {
			rec.OutputSchemas[mt.spec.Name] = mt.outRaw
		}
	}
	for _, s := range m.servers {
		s.mu.Lock()
		if s.dead != nil {
			rec.Unavailable[s.cfg.Name] = s.deadWhy
		}
		s.mu.Unlock()
	}
	return rec
}

// Bind returns callable tools for a Record made earlier (see Manager.Record),
// without starting any server: resuming a run uses the tool list it
// recorded, whatever the servers list now, until a server says its list
// changed. Every tool must name a configured server (NAME__TOOL) and a tool
// its allow/deny lists expose; a server recorded unavailable stays so.
func (m *Manager) Bind(rec Record) ([]shell.Tool, error) {
	byName := make(map[string]*server, len(m.servers))
	for _, s := range m.servers {
		byName[s.cfg.Name] = s
	}
	listed := map[*server][]*tool{}
	var tools []shell.Tool
	var errs []error
	for _, spec := range rec.Tools {
		srv, remote, ok := SplitToolName(spec.Name)
		s := byName[srv]
		switch {
		case !ok || s == nil:
			errs = append(errs, fmt.Errorf("tool %q: no configured mcp server for it", spec.Name))
			continue
		case !s.cfg.exposes(remote):
			errs = append(errs, fmt.Errorf("tool %q: mcp server %s does not expose %q", spec.Name, srv, remote))
			continue
		}
		t := &tool{spec: spec, remote: remote, srv: s}
		if raw := rec.OutputSchemas[spec.Name]; raw != nil {
			out, err := compileOutputSchema(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("tool %q: output schema: %v", spec.Name, err))
				continue
			}
			t.out, t.outRaw = out, raw
		}
		listed[s] = append(listed[s], t)
		tools = append(tools, t)
	}
	for _, name := range slices.Sorted(maps.Keys(rec.Unavailable)) {
		if byName[name] == nil {
			errs = append(errs, fmt.Errorf("unavailable mcp server %s is not configured", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, s := range m.servers {
		s.mu.Lock()
		s.listed = listed[s]
		if why, ok := rec.Unavailable[s.cfg.Name]; ok {
			s.dead, s.deadWhy = errors.New(why), why
		}
		s.mu.Unlock()
	}
	return tools, nil
}

// refresh lists the server's tools again after it said they changed, on its
// current session (none: nothing to do), and makes the new list current
// when it differs.
func (s *server) refresh() {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	x, err := s.current()
	if x == nil || err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.m.ctx, s.m.opts.startTimeout())
	defer cancel()
	listed, err := s.list(ctx, x)
	if err != nil {
		s.m.warn(fmt.Sprintf("mcp server %s: its tool list changed, but listing it again failed: %v", s.cfg.Name, err))
		return
	}
	tools, warnings := s.offer(listed)
	for _, w := range warnings {
		s.m.warn(w)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead != nil || s.closed || sameTools(s.listed, tools) {
		return
	}
	s.listed = tools
	s.m.version.Add(1)
}

// sameTools reports whether two lists offer the same tools, alike.
func sameTools(a, b []*tool) bool {
	return slices.EqualFunc(a, b, func(x, y *tool) bool {
		xs, _ := json.Marshal(x.spec)
		ys, _ := json.Marshal(y.spec)
		return bytes.Equal(xs, ys) && bytes.Equal(x.outRaw, y.outRaw)
	})
}

// giveUpLocked gives an optional server up for good after cause: its tools
// are withdrawn (Version grows), why is the reason recorded. It reports
// whether it did (a required server is never given up: its failures stay
// the run's). s.mu is held.
func (s *server) giveUpLocked(why string, cause error) bool {
	if !s.cfg.Optional {
		return false
	}
	if s.dead == nil {
		// No warning: the call that finds the server gone says so, and the
		// run reports its tools withdrawn.
		s.dead, s.deadWhy = cause, why
		s.m.version.Add(1)
	}
	return true
}

// Why an optional server was given up, as a run records it and the model
// reads it: short, and free of what the server printed (which may hold
// secrets; the warning has the details).
const (
	whyNoStart   = "it could not be started"
	whyNoRestart = "it stopped and could not be started again"
	whyNoRetries = "it stopped, with no restarts left"
)

// background runs f in a goroutine that Close waits for; after Close it
// does nothing.
func (m *Manager) background(f func()) {
	m.bgMu.Lock()
	defer m.bgMu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	m.bg.Go(f)
}

// warn passes msg to Options.Warn, once: a list listed again repeats its
// warnings.
func (m *Manager) warn(msg string) {
	if m.opts.Warn == nil {
		return
	}
	m.bgMu.Lock()
	seen := m.warned[msg]
	if !seen && len(m.warned) < maxWarned {
		if m.warned == nil {
			m.warned = map[string]bool{}
		}
		m.warned[msg] = true
	}
	m.bgMu.Unlock()
	if !seen {
		m.opts.Warn(msg)
	}
}

// maxWarned bounds the warnings remembered (see warn).
const maxWarned = 1000
