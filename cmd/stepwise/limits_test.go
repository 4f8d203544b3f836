package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/memtest"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

const mib = 1 << 20

// repeated is an endless-looking stream of n bytes of x, produced as read
// (the test holds none of it).
func repeated(x byte, n int64) io.Reader {
	return io.LimitReader(byteReader(x), n)
}

type byteReader byte

func (b byteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// inprocStdin runs the CLI in this process with stdin and db.
func inprocStdin(db string, stdin io.Reader, args ...string) result {
	var out, errb strings.Builder
	e := &env{stdin: stdin, stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "STEPWISE_DB" {
			return db
		}
		return ""
	}}
	code := e.main(args)
	return result{code, out.String(), errb.String()}
}

// sparse makes a file of size zero bytes that takes no room on disk.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// A 50 MB agent file is refused from its size with exit 2, before it is
// read (under 1 MB allocated) and before the database is even opened.
func TestOversizedAgentFileIsRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	big, db := filepath.Join(dir, "big.toml"), filepath.Join(dir, "s.db")
	sparse(t, big, 50*mib)
	var r result
	n := memtest.Allocated(func() { r = inprocStdin(db, strings.NewReader(""), "run", big, "hello") })
	if r.code != exitUsage || !strings.Contains(r.stderr, "an agent file may hold at most 1048576 bytes (1 MiB) and this one is 52428800 bytes") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !memtest.Under(n, 1*mib) {
		t.Errorf("refusing a 50 MB agent file allocated %d bytes, want under 1 MiB", n)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
}

// tinyAgent writes an agent that is never called.
func tinyAgent(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte("name = \"tiny\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A 50 MB input on stdin is refused with exit 2 once 2 MiB + 1 byte have
// arrived, under 8 MiB allocated, and nothing is stored; so is one given
// as an argument.
func TestOversizedInputIsRefusedBeforeItIsStored(t *testing.T) {
	dir := t.TempDir()
	ag, db := tinyAgent(t, dir), filepath.Join(dir, "s.db")
	var r result
	n := memtest.Allocated(func() { r = inprocStdin(db, repeated('x', 50*mib), "run", ag) })
	if r.code != exitUsage || !strings.Contains(r.stderr, "the input may be at most 2097152 bytes (2 MiB)") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !memtest.Under(n, 8*mib) {
		t.Errorf("refusing a 50 MB input allocated %d bytes, want under 8 MiB", n)
	}
	t.Logf("a 50 MB input on stdin: %d bytes allocated", n)
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
	r = inprocStdin(db, strings.NewReader(""), "run", ag, strings.Repeat("x", 2*mib+1))
	if r.code != exitUsage || !strings.Contains(r.stderr, "the input may be at most 2097152 bytes (2 MiB) and this one is 2097153 bytes") {
		t.Fatalf("argument: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
}

// A 50 MB results file is refused from its size, unread; 50 MB of
// results on stdin once 8 MiB + 1 byte have arrived (under 32 MB
// allocated). Either way the command stops with exit 2 before it opens
// the store.
func TestOversizedResultsAreRefusedBeforeTheyAreDecoded(t *testing.T) {
	dir := t.TempDir()
	big, db := filepath.Join(dir, "results.json"), filepath.Join(dir, "s.db")
	sparse(t, big, 50*mib)
	var r result
	n := memtest.Allocated(func() { r = inprocStdin(db, strings.NewReader(""), "resume", "some-run", "--results", big) })
	if r.code != exitUsage || !strings.Contains(r.stderr, "a results file may be at most 8388608 bytes (8 MiB) and this one is 52428800 bytes") {
		t.Fatalf("file: exit %d, stderr %q", r.code, r.stderr)
	}
	if !memtest.Under(n, 1*mib) {
		t.Errorf("refusing a 50 MB results file allocated %d bytes, want under 1 MiB", n)
	}
	n = memtest.Allocated(func() { r = inprocStdin(db, repeated('[', 50*mib), "resume", "some-run", "--results", "-") })
	if r.code != exitUsage || !strings.Contains(r.stderr, "a results file may be at most 8388608 bytes (8 MiB) and this one is more than that") {
		t.Fatalf("stdin: exit %d, stderr %q", r.code, r.stderr)
	}
	if !memtest.Under(n, 32*mib) {
		t.Errorf("refusing 50 MB of results on stdin allocated %d bytes, want under 32 MiB", n)
	}
	t.Logf("50 MB of results on stdin: %d bytes allocated", n)
	n = memtest.Allocated(func() { r = inprocStdin(db, strings.NewReader(""), "fork", "some-run", "--at", "1", "--result", big) })
	if r.code != exitUsage || !strings.Contains(r.stderr, "a result file may be at most 8388608 bytes") || !memtest.Under(n, 1*mib) {
		t.Fatalf("fork: exit %d, stderr %q, %d bytes allocated", r.code, r.stderr, n)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
}

// bigRuns stores n runs whose agent source is size bytes each (as a
// 5 MB system prompt makes it), without the CLI (which refuses such an
// agent file now; runs stored before the limit may have one).
func bigRuns(t *testing.T, db string, n, size int) {
	t.Helper()
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := core.Config{Name: "heavy", Models: core.Models{Primary: "m"}}
	src := []byte(`{"toml":"name = \"heavy\"\nsystem_prompt = \"` + strings.Repeat("p", size) + `\""}`)
	for i := range n {
		initial, err := core.Start(cfg, core.Request{Input: "question"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateRun(context.Background(), store.NewRun{ID: fmt.Sprintf("run-%02d", i), Agent: "heavy", Config: src, Input: "question", Initial: initial}); err != nil {
			t.Fatal(err)
		}
	}
}

// ls over 10 runs whose agent sources weigh 5 MB each reads none of them:
// under 4 MiB allocated (50 MB and more before); stats holds one run at a
// time: its peak heap stays under 48 MiB (all ten, over 100 MB, before).
func TestListingsReadOnlyWhatTheyShow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	bigRuns(t, db, 10, 5*mib)
	for _, args := range [][]string{{"ls"}, {"ls", "--json"}, {"ls", "--status", "interrupted"}} {
		var r result
		n := memtest.Allocated(func() { r = inprocStdin(db, strings.NewReader(""), args...) })
		if r.code != 0 || strings.Count(r.stdout, "run-") != 10 {
			t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		if !memtest.Under(n, 4*mib) {
			t.Errorf("%v over 10 runs with 5 MB agents allocated %d bytes, want under 4 MiB", args, n)
		}
		t.Logf("%v: %d bytes allocated", args, n)
	}
	var r result
	peak := memtest.PeakHeap(func() { r = inprocStdin(db, strings.NewReader(""), "stats", "--json") })
	if r.code != 0 || !strings.Contains(r.stdout, `"runs":10`) {
		t.Fatalf("stats: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !memtest.Under(peak, 48*mib) {
		t.Errorf("stats over 10 runs with 5 MB agents held %d bytes at its peak, want under 48 MiB", peak)
	}
	t.Logf("stats: %d bytes at its peak", peak)
}

// replyServer answers every chat completion with a reply of size bytes,
// written as it goes (chunked, no Content-Length, unless declared), in
// the shape of a completion whose text never ends.
func replyServer(t *testing.T, size int64, declare bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if declare {
			w.Header().Set("Content-Length", fmt.Sprint(size))
		}
		head := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`
		io.WriteString(w, head)
		io.Copy(w, repeated('x', size-int64(len(head))))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// streamServer answers with an event stream of chunks of 64 KiB of text
// each, size bytes in all, with no end.
func streamServer(t *testing.T, size int) *httptest.Server {
	chunk := "data: " + chatChunk(`{"content":"`+strings.Repeat("y", 64<<10)+`"}`, "") + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for sent := 0; sent < size && r.Context().Err() == nil; sent += len(chunk) {
			io.WriteString(w, chunk)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A 20 MB model reply is refused as it arrives, whole or streamed, with a
// clear failure and bounded allocation; none of it is stored.
func TestOversizedModelReplyIsRefusedUnstored(t *testing.T) {
	for _, c := range []struct {
		name, stream string
		srv          *httptest.Server
		bound        uint64
		want         string
	}{
		{"whole", "stream = false", replyServer(t, 20*mib, false), 40 * mib, "larger than 8388608 bytes"},
		{"declared", "stream = false", replyServer(t, 20*mib, true), 2 * mib, "larger than 8388608 bytes"},
		// Bounded by the limit, not by the reply: 20 MB and 60 MB
		// streams cost the same. (A stream's pieces are decoded one by
		// one: the SDK's copies of each piece make it several times what
		// is kept.)
		{"streamed", "", streamServer(t, 20*mib), 128 * mib, "larger than 8388608 bytes"},
		{"streamed-60MB", "", streamServer(t, 60*mib), 128 * mib, "larger than 8388608 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ag, db := filepath.Join(dir, "agent.toml"), filepath.Join(dir, "s.db")
			text := fmt.Sprintf("name = \"big-reply\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"%s/v1\"\n%s\n", c.srv.URL, c.stream)
			if err := os.WriteFile(ag, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			var r result
			n := memtest.Allocated(func() { r = inprocStdin(db, strings.NewReader(""), "run", "--quiet", "--json", ag, "hello") })
			if !strings.Contains(r.stdout, c.want) {
				t.Fatalf("exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
			}
			if !memtest.Under(n, c.bound) {
				t.Errorf("refusing a 20 MB reply allocated %d bytes, want under %d", n, c.bound)
			}
			t.Logf("exit %d, %d bytes allocated: %s", r.code, n, r.stdout)
			if fi, err := os.Stat(db); err != nil || fi.Size() > 1*mib {
				t.Errorf("the database holds %v bytes (%v): the reply was stored", fi.Size(), err)
			}
		})
	}
}

// readBounded takes a file or a stream of exactly its limit, and refuses
// one byte more.
func TestReadBoundedAtTheLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	e := &env{}
	for _, c := range []struct {
		size int64
		ok   bool
	}{{0, true}, {1000, true}, {1001, false}} {
		if err := os.WriteFile(p, []byte(strings.Repeat("a", int(c.size))), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := e.readBounded(p, "it", 1000)
		e.stdin = repeated('a', c.size)
		got2, err2 := e.readBounded("-", "it", 1000)
		if c.ok != (err == nil) || c.ok != (err2 == nil) || (c.ok && (int64(len(got)) != c.size || int64(len(got2)) != c.size)) {
			t.Errorf("size %d: file %d bytes, %v; stream %d bytes, %v", c.size, len(got), err, len(got2), err2)
		}
	}
}
