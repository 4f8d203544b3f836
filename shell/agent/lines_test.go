package agent

import "testing"

func TestKeyLines(t *testing.T) {
	doc := `name = "a"            # 1
format = "xml"

[models.primary]        # 4
provider = "openai"
retry.attempts = 3      # 6

[models.primary.retry]  # 8
backoff = "1s"

[[tools]]               # 11
name = "t0"
parameters = { type = "object", properties = { n = { type = "integer" } } }

[[tools]]               # 15
name = "t1"
retry = { attempts = 2,
  backoff = "1s" }      # 18

[tools.parameters]      # 20
type = "object"

[[tools]]               # 23
builtin = "files"

[[mcp]]                 # 26
name = "m"
headers = [{ a = "x" }, { b = "y" }]  # 28
`
	want := map[string]int{
		"name": 1, "format": 2,
		"models.primary": 4, "models.primary.provider": 5,
		"models.primary.retry": 6, "models.primary.retry.attempts": 6, "models.primary.retry.backoff": 9,
		"tools.0": 11, "tools.0.name": 12, "tools.0.parameters": 13, "tools.0.parameters.properties.n.type": 13,
		"tools.1": 15, "tools.1.retry": 17, "tools.1.retry.attempts": 17, "tools.1.retry.backoff": 18,
		"tools.1.parameters": 20, "tools.1.parameters.type": 21,
		"tools.2": 23, "tools.2.builtin": 24,
		"mcp.0": 26, "mcp.0.headers.1": 28, "mcp.0.headers.1.b": 28,
	}
	got := indexKeys([]byte(doc))
	for path, line := range want {
		if got[path] != line {
			t.Errorf("line of %s = %d, want %d", path, got[path], line)
		}
	}
	for path, line := range map[string]int{"tools.1.retry.jitter": 17, "limits.max_steps": 0, "tools.9.name": 0} {
		if n := got.of(path); n != line {
			t.Errorf("of(%s) = %d, want %d", path, n, line)
		}
	}
}
