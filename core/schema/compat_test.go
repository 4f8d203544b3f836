package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestNearMatch(t *testing.T) {
	cands := []string{"base", "exponent", "max_results", "query", "a"}
	for _, tc := range []struct{ name, want string }{
		{"BASE", "base"}, {"Base", "base"}, {"maxResults", "max_results"}, {"MAX-RESULTS", "max_results"},
		{"qurey", "query"}, {"querry", "query"}, {"exponnet", "exponent"}, {"exponents", "exponent"},
		{"b", ""}, {"bse", ""}, {"zeta", ""}, {"limit", ""}, {"A", "a"}, {strings.Repeat("x", 65), ""},
	} {
		if got := nearMatch(tc.name, cands); got != tc.want {
			t.Errorf("nearMatch(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// genDupArgs draws argument objects with exactly one key given twice, at
// any depth, and the path of that key; written compactly or with spaces.
func genDupArgs(t *rapid.T) (string, string) {
	type node struct {
		keys []string
		vals []*node // nil: a scalar
		arr  bool
	}
	var objects []*node // every object node, to pick the duplicate's home
	var paths []argPath
	var build func(depth int, p argPath, arr bool) *node
	build = func(depth int, p argPath, arr bool) *node {
		n := &node{arr: arr}
		if !arr {
			objects = append(objects, n)
			paths = append(paths, p)
		}
		count := rapid.IntRange(0, 3).Draw(t, "members")
		for i := range count {
			var k string
			if !arr {
				k = fmt.Sprintf("k%d", i)
			}
			n.keys = append(n.keys, k)
			var child *node
			if depth < 3 && rapid.IntRange(0, 2).Draw(t, "nested") == 0 {
				cp := p.index(i)
				if !arr {
					cp = p.key(k)
				}
				child = build(depth+1, cp, rapid.Bool().Draw(t, "array"))
			}
			n.vals = append(n.vals, child)
		}
		return n
	}
	root := build(0, nil, false)
	at := rapid.IntRange(0, len(objects)-1).Draw(t, "dup-at")
	home := objects[at]
	var key string
	if len(home.keys) == 0 || rapid.Bool().Draw(t, "fresh key") {
		key = "dup"
		home.keys = append(home.keys, key, key)
		home.vals = append(home.vals, nil, nil)
	} else {
		i := rapid.IntRange(0, len(home.keys)-1).Draw(t, "dup-key")
		key = home.keys[i]
		home.keys = append(home.keys, key)
		home.vals = append(home.vals, nil)
	}
	sep := rapid.SampledFrom([]string{"", " ", "\n  "}).Draw(t, "space")
	var write func(b *strings.Builder, n *node)
	write = func(b *strings.Builder, n *node) {
		open, end := "{", "}"
		if n.arr {
			open, end = "[", "]"
		}
		b.WriteString(open)
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString("," + sep)
			}
			if !n.arr {
				b.WriteString(fmt.Sprintf("%q:%s", k, sep))
			}
			if n.vals[i] == nil {
				b.WriteString(fmt.Sprint(i))
			} else {
				write(b, n.vals[i])
			}
		}
		b.WriteString(end)
	}
	var b strings.Builder
	write(&b, root)
	return b.String(), paths[at].key(key).String()
}

// TestDecodeArgsAlwaysRefusesRepeatedKeys: a key given twice anywhere in the
// arguments is refused by name, whichever decoder reads them.
func TestDecodeArgsAlwaysRefusesRepeatedKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		args, path := genDupArgs(t)
		if !json.Valid([]byte(args)) {
			t.Fatalf("generated invalid JSON %s", args)
		}
		_, err := DecodeArgs(args)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("argument %q is given more than once", path)) {
			t.Fatalf("%s: %v, want the key %s named", args, err, path)
		}
	})
}

func TestRepeatedKeyIgnoresSameKeysInDifferentObjects(t *testing.T) {
	for _, text := range []string{`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, `{}`, `[{"a":1}]`, `{"a":1,"b":`} {
		if p, dup := repeatedKey(text); dup {
			t.Errorf("%s: reported %s", text, p)
		}
	}
}
