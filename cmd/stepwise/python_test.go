package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requirePython is python3 (3.9 or later) for a test of a Python client:
// without one the test skips, saying what was not tested, or fails when
// STEPWISE_REQUIRE_PYTHON=1 (CI sets it, so that a missing python3 cannot
// pass unnoticed).
func requirePython(t *testing.T, what string) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	why := "python3 is not on PATH"
	if err == nil {
		out, verr := exec.Command(python, "-c", "import sys; sys.exit(sys.version_info < (3, 9))").CombinedOutput()
		if verr == nil {
			return python
		}
		why = "python3 is older than 3.9 " + strings.TrimSpace(string(out))
	}
	if os.Getenv("STEPWISE_REQUIRE_PYTHON") == "1" {
		t.Fatalf("STEPWISE_REQUIRE_PYTHON=1 and %s: %s cannot run", why, what)
	}
	t.Skipf("NOT TESTED: %s, so %s did not run (STEPWISE_REQUIRE_PYTHON=1 makes this fail)", why, what)
	return ""
}

// TestPythonPackage: the Python client package (clients/python, standard
// library only) passes its unittest suite against a real `stepwise serve`
// with a token: every route, drive and say, the errors, retries that keep
// their Idempotency-Key, and event streams that a proxy of the suite's own
// cuts after every step and mid-event, none of their steps lost or
// repeated. The package is not installed: PYTHONPATH points at its source.
func TestPythonPackage(t *testing.T) {
	python := requirePython(t, "the tests of clients/python")
	const token = "python-package-test-token"
	db := filepath.Join(t.TempDir(), "serve.db")
	s := startServe(t, db, "../../testdata/agents", "STEPWISE_TOKENS="+token)
	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "clients/python/tests")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "STEPWISE_URL="+s.url, "STEPWISE_TOKEN="+token,
		"STEPWISE_TEST_AGENT_EXTERNAL=external", "STEPWISE_TEST_AGENT_CHAT=chat",
		"PYTHONPATH=clients/python/src", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s\nserver:\n%s", err, out, s.logText())
	}
	// Every test ran: none skipped for want of the server.
	if strings.Contains(string(out), "skipped 'STEPWISE_URL") {
		t.Fatalf("tests skipped:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("%s", strings.Join(lines[max(0, len(lines)-3):], "\n"))
}
