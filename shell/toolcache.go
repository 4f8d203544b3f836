package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// CachePolicy lets the shell answer a call of a cacheable tool with an
// earlier result of the same tool for the same arguments (their canonical
// JSON, as the core validated them) instead of running it. Only
// idempotent tools may be cached, and only successful results are kept.
// A result taken from the cache has core.ToolResult.Cached set; it is
// recorded with the step like any result, so a replay, which feeds the
// recorded results, is exact, and `stepwise show` can tell.
type CachePolicy struct {
	// TTL, when positive, keeps results across runs of the agent (by its
	// name) in the store's store.ToolCache, each for TTL. Zero keeps them
	// for the run: a later call of the run with the same arguments gets
	// the earlier result, also after the run was resumed.
	TTL time.Duration
	// Version identifies what the tool is, for results kept across runs:
	// those kept under another version are not used. The agent loader sets
	// a digest of the tool's table in the agent file (its command,
	// settings and declaration), so a changed table starts afresh; a change
	// the table does not show (the script a command runs, a Go tool's
	// code) needs a new Version, or the old results until they expire.
	Version string
}

func (p CachePolicy) validate() error {
	if p.TTL < 0 {
		return fmt.Errorf("cache: ttl %s is negative", p.TTL)
	}
	return nil
}

// runCache is the results of a run's cacheable calls, by tool and
// arguments: what a cache of the run's scope answers from.
type runCache map[string]core.ToolResult

func runCacheKey(tool string, args []byte) string { return tool + "\x00" + string(args) }

// cachePolicy is the cache policy of the tool name, if it has one.
func cachePolicy(ag *Agent, name string) (CachePolicy, bool) {
	s, ok := ag.ToolSettings[name]
	if !ok || s.Cache == nil {
		return CachePolicy{}, false
	}
	return *s.Cache, true
}

// fromCache answers c from the cache of its tool, if it is cacheable and
// the cache holds a result for its arguments. A store that fails to answer
// is a miss: the tool runs.
func (r *Runner) fromCache(ctx context.Context, ag *Agent, cur *cursor, c core.ToolCall, x Redactor) (core.ToolResult, bool) {
	p, ok := cachePolicy(ag, c.Name)
	if !ok {
		return core.ToolResult{}, false
	}
	var res core.ToolResult
	if p.TTL > 0 {
		tc, ok := r.store.(store.ToolCache)
		if !ok {
			return core.ToolResult{}, false
		}
		e, err := tc.CachedResult(ctx, store.ToolCacheKey(ag.Config.Name, c.Name, p.Version, []byte(x.String(string(c.Args)))))
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				r.emit(func() Event {
					return Event{RunID: cur.id, Seq: cur.seq, Kind: "cache", Text: fmt.Sprintf("%s#%s: the cache did not answer (%v); running it", c.Name, c.ID, err)}
				})
			}
			return core.ToolResult{}, false
		}
		res = core.ToolResult{Output: e.Output, Sources: e.Sources}
	} else {
		cache, err := r.runCache(ctx, ag, cur)
		if err != nil {
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "cache", Text: fmt.Sprintf("%s#%s: the run's earlier results could not be read (%v); running it", c.Name, c.ID, err)}
			})
			return core.ToolResult{}, false
		}
		cur.cacheMu.Lock()
		res, ok = cache[runCacheKey(c.Name, c.Args)]
		cur.cacheMu.Unlock()
		if !ok {
			return core.ToolResult{}, false
		}
	}
	res.CallID, res.Cached = c.ID, true
	return x.ToolResult(sanitizeTool(res)), true
}

// toCache keeps a successful result of a cacheable tool. A store that
// fails to keep it only costs a later call its hit.
func (r *Runner) toCache(ctx context.Context, ag *Agent, cur *cursor, c core.ToolCall, res core.ToolResult, x Redactor) {
	p, ok := cachePolicy(ag, c.Name)
	if !ok || res.Failed() {
		return
	}
	if p.TTL > 0 {
		tc, ok := r.store.(store.ToolCache)
		if !ok {
			return
		}
		e := store.CachedResult{Key: store.ToolCacheKey(ag.Config.Name, c.Name, p.Version, []byte(x.String(string(c.Args)))),
			Tool: c.Name, Output: res.Output, Sources: res.Sources}
		if err := tc.CacheResult(ctx, e, p.TTL); err != nil {
			r.emit(func() Event {
				return Event{RunID: cur.id, Seq: cur.seq, Kind: "cache", Text: fmt.Sprintf("%s#%s: the result was not cached (%v)", c.Name, c.ID, err)}
			})
		}
		return
	}
	cur.cacheMu.Lock()
	if cur.cache != nil {
		res.CallID, res.Cached = "", false
		cur.cache[runCacheKey(c.Name, c.Args)] = res
	}
	cur.cacheMu.Unlock()
}

// runCache is the run's cache of its cacheable calls, read once per drive
// from the results the run recorded (so it survives a pause, a crash and
// a resume), then kept up to date as calls finish.
func (r *Runner) runCache(ctx context.Context, ag *Agent, cur *cursor) (runCache, error) {
	cur.cacheMu.Lock()
	defer cur.cacheMu.Unlock()
	if cur.cache != nil {
		return cur.cache, nil
	}
	cache := runCache{}
	var calls map[string]core.ToolCall // the calls of the step before
	err := r.store.Steps(ctx, cur.id, func(rec store.StepRecord) error {
		if res, ok := rec.Result.(core.ToolResults); ok && calls != nil {
			for _, x := range res.Results {
				c, ok := calls[x.CallID]
				if _, cacheable := cachePolicy(ag, c.Name); ok && cacheable && !x.Failed() {
					x.CallID, x.Cached = "", false
					cache[runCacheKey(c.Name, c.Args)] = x
				}
			}
		}
		calls = nil
		if a, ok := rec.Action.(core.RequestToolCalls); ok {
			calls = make(map[string]core.ToolCall, len(a.Calls))
			for _, c := range a.Calls {
				calls[c.ID] = c
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cur.cache = cache
	return cache, nil
}
