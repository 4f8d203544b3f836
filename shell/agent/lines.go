package agent

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyLines maps the keys of a TOML document to the lines they are on, so
// that errors found after decoding can name one. A key's path joins its
// parts with dots and numbers the elements of arrays of tables from 0:
// "format", "limits.max_steps", "models.primary" (the [models.primary]
// header, or the first key that implies it), "tools.1" (the second
// [[tools]] header), "tools.1.parameters", "tools.1.retry.backoff" (also
// inside an inline table).
type keyLines map[string]int

// indexKeys indexes data, which must be valid TOML (it has been decoded).
func indexKeys(data []byte) keyLines {
	ix := &indexer{lines: keyLines{}, count: map[string]int{}, current: map[string]string{}}
	ix.p.Reset(data)
	table := ""
	for ix.p.NextExpression() {
		e := ix.p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, first := keyParts(e.Key())
			table = ix.resolve(parts, e.Kind == unstable.ArrayTable)
			ix.set(table, first)
		case unstable.KeyValue:
			ix.keyValue(table, e)
		}
	}
	return ix.lines
}

type indexer struct {
	p     unstable.Parser
	lines keyLines
	// count is how many elements each array of tables has so far; current
	// is the path of its last element, which the keys below it extend.
	count   map[string]int
	current map[string]string
}

// resolve turns a header's key into a path: a part that names an array of
// tables continues in its last element; a new array element is numbered.
func (ix *indexer) resolve(parts []string, newElement bool) string {
	path := ""
	for i, part := range parts {
		path = join(path, part)
		if newElement && i == len(parts)-1 {
			n := ix.count[path]
			ix.count[path] = n + 1
			ix.current[path] = join(path, strconv.Itoa(n))
		}
		if el, ok := ix.current[path]; ok {
			path = el
		}
	}
	return path
}

// keyValue records a key-value under table, its dotted key's prefixes and
// the keys of an inline table or of an array of inline tables it holds.
func (ix *indexer) keyValue(table string, kv *unstable.Node) {
	parts, first := keyParts(kv.Key())
	path := table
	for _, part := range parts {
		path = join(path, part)
		ix.set(path, first)
	}
	switch v := kv.Value(); v.Kind {
	case unstable.InlineTable:
		ix.inline(path, v)
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); {
			if el := it.Node(); el.Kind == unstable.InlineTable {
				ix.set(join(path, strconv.Itoa(i)), first)
				ix.inline(join(path, strconv.Itoa(i)), el)
			}
			i++
		}
	}
}

func (ix *indexer) inline(path string, t *unstable.Node) {
	for it := t.Children(); it.Next(); {
		if n := it.Node(); n.Kind == unstable.KeyValue {
			ix.keyValue(path, n)
		}
	}
}

// set records the line of key node k for path, unless an earlier key has.
func (ix *indexer) set(path string, k *unstable.Node) {
	if _, ok := ix.lines[path]; !ok && k != nil {
		ix.lines[path] = ix.p.Shape(k.Raw).Start.Line
	}
}

func keyParts(it unstable.Iterator) ([]string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return parts, first
}

func join(path, part string) string {
	if path == "" {
		return part
	}
	return path + "." + part
}

// of is the line of path, or of its closest parent in the document
// ("tools.1.parameters", else "tools.1"), or 0.
func (l keyLines) of(path string) int {
	for ; path != ""; path = parent(path) {
		if n, ok := l[path]; ok {
			return n
		}
	}
	return 0
}

func parent(path string) string {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return ""
	}
	return path[:i]
}
