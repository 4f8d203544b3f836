package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tsClient is the TypeScript client's directory (clients/typescript).
const tsClient = "../../clients/typescript"

// nodeRequired says whether a missing node (or typescript) fails the
// client's tests instead of skipping them: under CI=true or
// STEPWISE_REQUIRE_NODE=1 (.ci/run sets it).
func nodeRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("STEPWISE_REQUIRE_NODE") == "1"
}

// notTested skips the test, loudly, or fails it when node is required.
func notTested(t *testing.T, what, fix string) {
	t.Helper()
	bar := strings.Repeat("!", 78)
	msg := bar + "\nTHE TYPESCRIPT CLIENT IS NOT TESTED: " + what + ".\n" + fix +
		"\nCI=true or STEPWISE_REQUIRE_NODE=1 makes this a failure.\n" + bar
	if nodeRequired() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// nodeTool finds node 18 or later.
func nodeTool(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		notTested(t, "node is not installed", "Install Node.js 18 or later (apt-get install nodejs npm).")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
	if n, _ := strconv.Atoi(major); err != nil || n < 18 {
		notTested(t, "node "+strings.TrimSpace(string(out))+" is older than 18", "Install Node.js 18 or later.")
	}
	return node
}

// TestTypeScriptClient runs the TypeScript client's tests (node's test
// runner over clients/typescript/test/*.test.mjs) against a real `stepwise
// serve` of testdata/agents, at STEPWISE_URL: a paused run driven to its
// end, a three-turn conversation with say, event streams cut by a proxy
// and resumed with no step lost or repeated, the API's error codes,
// retries with one Idempotency-Key, and that src/api-types.d.ts is what
// scripts/gen-types.mjs makes of openapi.json now. None may skip.
func TestTypeScriptClient(t *testing.T) {
	node := nodeTool(t)
	files, err := filepath.Glob(filepath.Join(tsClient, "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests in %s/test: %v", tsClient, err)
	}
	s := startServe(t, filepath.Join(t.TempDir(), "serve.db"), "../../testdata/agents")
	args := []string{"--test", "--test-reporter=tap"}
	for _, f := range files {
		args = append(args, filepath.ToSlash(filepath.Join("test", filepath.Base(f))))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = tsClient
	cmd.Env = append(os.Environ(), "STEPWISE_URL="+s.url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	tap := out.String()
	count := func(what string) int {
		m := regexp.MustCompile(`(?m)^# ` + what + ` (\d+)$`).FindStringSubmatch(tap)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if err != nil || count("fail") != 0 || count("cancelled") != 0 || count("skipped") != 0 || count("todo") != 0 || count("pass") < 1 {
		t.Fatalf("node %s: %v\n%s\nserver log:\n%s", strings.Join(args, " "), err, tap, s.logText())
	}
	t.Logf("node's test runner: %d tests passed", count("pass"))
}

// TestTypeScriptTypes type-checks the client's declarations (src/index.d.ts,
// the generated src/api-types.d.ts) and test/usage.ts, which uses them as
// the README does, with the typescript that package-lock.json pins (make
// test installs it with npm ci: clients/typescript/scripts/check.sh).
func TestTypeScriptTypes(t *testing.T) {
	node := nodeTool(t)
	tsc := filepath.Join(tsClient, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		notTested(t, "typescript is not installed in clients/typescript/node_modules, so its types are not checked",
			"Run npm ci --prefix clients/typescript (make test does, when npm is installed).")
	}
	cmd := exec.Command(node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	cmd.Dir = tsClient
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc -p clients/typescript/tsconfig.json: %v\n%s", err, out)
	}
}
