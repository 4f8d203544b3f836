package agent

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The [[mcp]] keys of mature clients map onto the server configs: roots as
// file:// URIs (paths relative to the agent file), required = false as an
// optional server, the cancellation grace and the attachment cap; left out,
// each means the default.
func TestMCPKeys(t *testing.T) {
	s, err := Parse([]byte(`name = "a"
[models.primary]
provider = "openai"
model = "m"
accepts = ["image", "audio"]
[[mcp]]
name = "fs"
command = "srv"
roots = ["data", "/srv/share", "file:///tmp/x"]
required = false
cancel_grace = "2s"
max_attachment_bytes = 5000
[[mcp]]
name = "plain"
command = "srv"
`), "a.toml", "/agents")
	if err != nil {
		t.Fatal(err)
	}
	servers, err := s.mcpServers()
	if err != nil {
		t.Fatal(err)
	}
	fs, plain := servers[0], servers[1]
	if !slices.Equal(fs.Roots, []string{"file:///agents/data", "file:///srv/share", "file:///tmp/x"}) || !fs.Optional ||
		fs.CancelGrace != 2*time.Second || fs.MaxAttachmentBytes != 5000 {
		t.Fatalf("fs = %+v", fs)
	}
	if plain.Roots != nil || plain.Optional || plain.CancelGrace != 0 || plain.MaxAttachmentBytes != 0 {
		t.Fatalf("plain = %+v, want the defaults", plain)
	}
	if !slices.Equal(s.File.Models["primary"].Accepts, []string{"image", "audio"}) {
		t.Fatalf("accepts = %v", s.File.Models["primary"].Accepts)
	}
}

func TestMCPKeyErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\naccepts = [\"video\"]\n", `accepts: "video" is not one of "image", "audio"`},
		{"[models.primary]\nprovider = \"script\"\nscript = \"s.jsonl\"\naccepts = [\"image\"]\n", "accepts: applies to provider openai only"},
	} {
		_, err := parse([]byte("name = \"a\"\n"+c.file), "a.toml", t.TempDir(), false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.file, err, c.want)
		}
	}
	s, err := Parse([]byte("name = \"a\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\n[[mcp]]\nname = \"x\"\ncommand = \"srv\"\ncancel_grace = \"soon\"\nroots = [\"https://example.com\"]\n"), "a.toml", "/agents")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.mcpServers(); err == nil || !strings.Contains(err.Error(), "cancel_grace") {
		t.Fatalf("bad cancel_grace: %v", err)
	}
	s.File.MCP[0].CancelGrace = ""
	if _, err := s.mcpServers(); err == nil || !strings.Contains(err.Error(), `root "https://example.com" must be a file:// URI`) {
		t.Fatalf("bad root: %v", err)
	}
}
