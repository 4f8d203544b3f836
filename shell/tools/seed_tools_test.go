package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// TestSystemStats: the host's CPU, memory and disk as key=value
// percentages, read from /proc and statfs; a /proc without the files is a
// failure the model reads.
func TestSystemStats(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("system_stats reads /proc")
	}
	res := run(t, SystemStats(SystemStatsOptions{}), `{}`)
	if res.Failed() {
		t.Fatal(res.Error)
	}
	shape := regexp.MustCompile(`^cpu=\d+\.\d% memory=\d+\.\d% disk=\d+\.\d% memory_total=[\d.]+[GM]iB disk_total=[\d.]+[GM]iB$`)
	if !shape.MatchString(res.Output) {
		t.Fatalf("output %q", res.Output)
	}
	// A fake /proc: two CPU readings cannot differ, memory half used.
	proc := t.TempDir()
	os.WriteFile(filepath.Join(proc, "stat"), []byte("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n"), 0o644)
	os.WriteFile(filepath.Join(proc, "meminfo"), []byte("MemTotal:       2097152 kB\nMemFree:  10 kB\nMemAvailable:   1048576 kB\n"), 0o644)
	res = run(t, SystemStats(SystemStatsOptions{Proc: proc, Disk: t.TempDir()}), `{}`)
	if res.Failed() || !strings.HasPrefix(res.Output, "cpu=0.0% memory=50.0% ") || !strings.Contains(res.Output, "memory_total=2.0GiB") {
		t.Fatalf("fake proc: %+v", res)
	}
	if res := run(t, SystemStats(SystemStatsOptions{Proc: t.TempDir()}), `{}`); !res.Failed() || !strings.Contains(res.Error, "cpu") {
		t.Fatalf("no /proc/stat: %+v", res)
	}
}

// A 1x1 PNG.
var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// TestGenerateImage: against an in-process server speaking OpenAI's
// images API, the request carries the model, prompt, size and the
// diffusion options given; the image comes back as an attachment; errors
// name the server's message, 5xx and 429 are transient.
func TestGenerateImage(t *testing.T) {
	var got map[string]any
	var auth string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/images/generations" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		auth = r.Header.Get("Authorization")
		got = nil
		json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			w.Write([]byte(`{"error": {"message": "the prompt was refused", "type": "invalid_request_error"}}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"created": 1, "data": []map[string]any{{
			"b64_json": base64.StdEncoding.EncodeToString(onePixelPNG), "revised_prompt": "a red lamp, studio light"}}})
	}))
	defer srv.Close()
	t.Setenv("TEST_IMAGE_KEY", "sk-test")
	tool := GenerateImage(ImageOptions{BaseURL: srv.URL + "/v1/", APIKeyEnv: "TEST_IMAGE_KEY", Model: "sd-xl"})
	res := run(t, tool, `{"prompt": "a red lamp", "width": 512, "height": 256, "steps": 30, "guidance_scale": 7.5}`)
	if res.Failed() {
		t.Fatal(res.Error)
	}
	if got["model"] != "sd-xl" || got["prompt"] != "a red lamp" || got["size"] != "512x256" || got["steps"] != 30.0 || got["guidance_scale"] != 7.5 ||
		got["n"] != 1.0 || auth != "Bearer sk-test" {
		t.Fatalf("request %v, auth %q", got, auth)
	}
	if len(res.Attachments) != 1 || res.Attachments[0].MIME != "image/png" || string(res.Attachments[0].Data) != string(onePixelPNG) ||
		!strings.Contains(res.Output, "512x256 image (image/png") || !strings.Contains(res.Output, "a red lamp, studio light") {
		t.Fatalf("result %+v", res)
	}
	res = run(t, tool, `{"prompt": "a lamp"}`)
	if res.Failed() || got["size"] != "1024x1024" || got["steps"] != nil || got["guidance_scale"] != nil {
		t.Fatalf("defaults: %v %+v", got, res)
	}
	status = http.StatusBadRequest
	if res := run(t, tool, `{"prompt": "x"}`); !res.Failed() || res.Transient || !strings.Contains(res.Error, "the prompt was refused") {
		t.Fatalf("400: %+v", res)
	}
	status = http.StatusServiceUnavailable
	if res := run(t, tool, `{"prompt": "x"}`); !res.Failed() || !res.Transient {
		t.Fatalf("503: %+v", res)
	}
	for _, args := range []string{`{"prompt": "x", "width": 10}`, `{"prompt": "x", "steps": 2.5}`, `{"prompt": ""}`, `{"width": 512}`} {
		if _, err := checkCall(tool, args); err == nil {
			t.Errorf("%s was accepted", args)
		}
	}
	if res := run(t, GenerateImage(ImageOptions{}), `{"prompt": "x"}`); !res.Failed() || !strings.Contains(res.Error, "base_url") {
		t.Fatalf("no base_url: %+v", res)
	}
	if spec := tool.Spec(); spec.Idempotent {
		t.Fatal("generate_image is declared idempotent: a retry would generate (and pay for) another image")
	}
}

// TestCommandStreamsLines: a command tool's stdout reaches the runner's
// progress line by line as it is written (numbered, long lines cut, blank
// ones left out), while the stored result is the whole output.
func TestCommandStreamsLines(t *testing.T) {
	tool, err := Command(CommandSpec{Name: "chatty", Argv: []string{"sh", "-c", "echo one; sleep 0.2; printf 'two\\n\\n'; printf '%0400d\\n' 0; printf 'no newline'"},
		Parameters: json.RawMessage(`{"type": "object"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []shell.ToolProgress
	var firstAt time.Duration
	start := time.Now()
	rc := shell.RunContext{Progress: func(p shell.ToolProgress) {
		mu.Lock()
		defer mu.Unlock()
		if len(lines) == 0 {
			firstAt = time.Since(start)
		}
		lines = append(lines, p)
	}}
	res := tool.Run(context.Background(), validCall(t, tool, `{}`), rc)
	if res.Failed() || !strings.HasPrefix(res.Output, "one\ntwo\n\n0000") || !strings.HasSuffix(res.Output, "no newline") {
		t.Fatalf("stored result %+v", res)
	}
	if len(lines) != 4 || lines[0].Message != "one" || lines[1].Message != "two" || len(lines[2].Message) != maxLiveLine || lines[3].Message != "no newline" ||
		lines[3].Progress != 4 {
		t.Fatalf("streamed %+v", lines)
	}
	if total := time.Since(start); firstAt > total-150*time.Millisecond {
		t.Fatalf("the first line came at %s of %s: not as it was written", firstAt, total)
	}
}
