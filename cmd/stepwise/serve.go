package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/stepwise-agent/stepwise/internal/server"
	"github.com/stepwise-agent/stepwise/shell"
)

func init() {
	c := &command{name: "serve", args: "--agents DIR [--addr HOST:PORT] [--workers N]", summary: "serve the HTTP API, its workers and the run inspector",
		help: `Serves the HTTP API (/v1/..., described at /openapi.json) and the run inspector (/)
over the database, with a pool of workers that drive runnable runs: new runs, answered
pauses, resumed runs, stalled runs whose retry time came, and runs whose server died.
Several servers on one PostgreSQL database share the work. Runs are created from the
agent files in --agents by name. With no token (--tokens-file, or STEPWISE_TOKENS, comma-
separated) the server listens on a loopback address only, answers only to loopback Host
names (and --allowed-hosts), and refuses a POST from another site's page (its Origin);
every POST needs Content-Type: application/json. SIGTERM or SIGINT: no new runs
are taken, the steps in flight finish (up to --grace), the runs are handed back, exit 0.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		agentsDir := fs.String("agents", "", "the directory of agent files runs are created from (NAME.toml), required")
		addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
		workers := fs.Int("workers", server.DefaultWorkers, "how many runs to drive at once")
		tokensFile := fs.String("tokens-file", "", "a file of bearer tokens, one per line (default $STEPWISE_TOKENS, comma-separated)")
		cors := fs.String("cors", "", "origins allowed to call the API from a browser, comma-separated (\"*\": any)")
		grace := fs.Duration("grace", server.DefaultGrace, "how long a shutdown waits for the steps in flight")
		maxBody := fs.Int64("max-body", server.DefaultMaxBody, "the largest request body, in bytes")
		allowedHosts := fs.String("allowed-hosts", "", "with no token, host names the server answers to besides loopback names, comma-separated")
		maxStreams := fs.Int("max-streams", server.DefaultMaxStreams, "the most event streams open at once (past it: 429)")
		exposeHolders := fs.Bool("expose-holders", false, "show lease holders' host names and pids in API responses")
		if _, code := e.parse(c, fs, args, 0, 0); code >= 0 {
			return code
		}
		if *agentsDir == "" {
			fmt.Fprintf(e.stderr, "stepwise serve: --agents DIR is required\n")
			return exitUsage
		}
		if *workers < 1 || *workers > 10000 {
			fmt.Fprintf(e.stderr, "stepwise serve: --workers: want 1 to 10000\n")
			return exitUsage
		}
		tokens, err := e.tokens(*tokensFile)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise serve: %v\n", err)
			return exitUsage
		}
		opts := shell.Options{}
		if v := e.getenv("STEPWISE_LEASE_TTL"); v != "" {
			ttl, err := time.ParseDuration(v)
			if err != nil || ttl < 100*time.Millisecond {
				fmt.Fprintf(e.stderr, "stepwise serve: STEPWISE_LEASE_TTL=%q: want a duration of at least 100ms\n", v)
				return exitUsage
			}
			opts.LeaseTTL = ttl
		}
		st, code := e.openStore(c.name, *db, false)
		if code >= 0 {
			return code
		}
		defer st.Close()
		if opts.Observer, code = e.tracer(st); code >= 0 {
			return code
		}
		srv, err := server.New(server.Config{Store: st, AgentsDir: *agentsDir, Workers: *workers, Tokens: tokens,
			CORSOrigins: splitList(*cors), Grace: *grace, MaxBody: *maxBody, Runner: opts, Log: e.stderr,
			AllowedHosts: splitList(*allowedHosts), MaxStreams: *maxStreams, ExposeHolders: *exposeHolders})
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise serve: %v\n", err)
			return exitUsage
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := srv.ListenAndServe(ctx, *addr); err != nil {
			fmt.Fprintf(e.stderr, "stepwise serve: %v\n", err)
			return exitUsage
		}
		return 0
	}
	register(c)
}

// tokens reads the bearer tokens: from file, one per line (blank lines and
// #comments skipped), else from $STEPWISE_TOKENS, comma-separated.
func (e *env) tokens(file string) ([]string, error) {
	var raw []string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--tokens-file: %w", err)
		}
		raw = strings.Split(string(b), "\n")
	} else if v := e.getenv("STEPWISE_TOKENS"); v != "" {
		raw = strings.Split(v, ",")
	}
	var out []string
	for _, t := range raw {
		if t = strings.TrimSpace(t); t != "" && !strings.HasPrefix(t, "#") {
			if len(t) < 16 {
				return nil, fmt.Errorf("a token is shorter than 16 characters: use long random tokens")
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
