package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The clients (clients/typescript, clients/python) each say what of
// internal/server/openapi.json they cover, in a coverage file of three flat
// maps from string to string:
//
//	ROUTES:  "METHOD /path" as the document writes it -> the client's method
//	SCHEMAS: a name of components.schemas -> the client's type for it
//	MISSING: a route or schema the client does not cover -> why
//
// written as JavaScript object literals (clients/typescript/src/coverage.js,
// `export const ROUTES = {` ... `};`) or Python dict literals
// (clients/python/src/stepwise/_coverage.py, `ROUTES = {` ... `}`), one
// `"KEY": "VALUE",` entry a line, blank and comment lines allowed between
// them. TestClientsCoverOpenAPI keeps both true to the document.

// clientCoverage is one client's coverage file, read.
type clientCoverage struct {
	routes, schemas, missing map[string]string
}

var (
	coverageOpen  = regexp.MustCompile(`^(?:export\s+const\s+)?(ROUTES|SCHEMAS|MISSING)\s*(?::[^=]*)?=\s*\{\s*(\}\s*;?)?\s*$`)
	coverageClose = regexp.MustCompile(`^\}\s*;?\s*$`)
	coverageEntry = regexp.MustCompile(`^\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*:\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*,?\s*(?:(?:#|//).*)?$`)
	coverageSkip  = regexp.MustCompile(`^\s*(?:(?:#|//).*)?$`)
)

// parseCoverage reads a coverage file's text; name is its path, for errors.
func parseCoverage(name, text string) (clientCoverage, error) {
	maps := map[string]map[string]string{}
	var open string // the map being read
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		where := fmt.Sprintf("%s:%d", name, i+1)
		if open == "" {
			m := coverageOpen.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if maps[m[1]] != nil {
				return clientCoverage{}, fmt.Errorf("%s: %s is given twice", where, m[1])
			}
			maps[m[1]] = map[string]string{}
			if m[2] == "" {
				open = m[1]
			}
			continue
		}
		switch {
		case coverageClose.MatchString(line):
			open = ""
		case coverageSkip.MatchString(line):
		default:
			m := coverageEntry.FindStringSubmatch(line)
			if m == nil {
				return clientCoverage{}, fmt.Errorf("%s: in %s, want one \"KEY\": \"VALUE\", entry a line, got %q", where, open, line)
			}
			k, err := unquoteCoverage(m[1])
			if err != nil {
				return clientCoverage{}, fmt.Errorf("%s: %v", where, err)
			}
			v, err := unquoteCoverage(m[2])
			if err != nil {
				return clientCoverage{}, fmt.Errorf("%s: %v", where, err)
			}
			if _, dup := maps[open][k]; dup {
				return clientCoverage{}, fmt.Errorf("%s: %s holds %q twice", where, open, k)
			}
			maps[open][k] = v
		}
	}
	if open != "" {
		return clientCoverage{}, fmt.Errorf("%s: %s is not closed (a line `}` or `};`)", name, open)
	}
	for _, m := range []string{"ROUTES", "SCHEMAS", "MISSING"} {
		if maps[m] == nil {
			return clientCoverage{}, fmt.Errorf("%s: no %s map (a line `%s = {`, or `export const %s = {`)", name, m, m, m)
		}
	}
	return clientCoverage{routes: maps["ROUTES"], schemas: maps["SCHEMAS"], missing: maps["MISSING"]}, nil
}

// unquoteCoverage reads a double- or single-quoted string of a coverage file.
func unquoteCoverage(q string) (string, error) {
	if q[0] == '\'' {
		q = `"` + strings.ReplaceAll(strings.ReplaceAll(q[1:len(q)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", fmt.Errorf("the string %s: %v", q, err)
	}
	return s, nil
}

// openAPIContract lists the routes ("METHOD /path") and schemas of
// internal/server/openapi.json.
func openAPIContract(t *testing.T) (routes, schemas []string) {
	t.Helper()
	data, err := os.ReadFile("../../internal/server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				routes = append(routes, strings.ToUpper(method)+" "+path)
			}
		}
	}
	for name := range doc.Components.Schemas {
		schemas = append(schemas, name)
	}
	slices.Sort(routes)
	slices.Sort(schemas)
	if len(routes) == 0 || len(schemas) == 0 {
		t.Fatalf("openapi.json: %d routes, %d schemas", len(routes), len(schemas))
	}
	return routes, schemas
}

// coverageProblems lists what is wrong with a client's coverage of the
// document: a route or schema neither covered nor listed as missing (or
// both), an entry naming one the document no longer has, a missing one with
// no reason, and a method or type named that the client's source lacks.
func coverageProblems(cov clientCoverage, routes, schemas []string, hasMethod, hasType func(string) bool) []string {
	var out []string
	check := func(kind string, names []string, covered map[string]string) {
		for _, n := range names {
			_, c := covered[n]
			_, m := cov.missing[n]
			switch {
			case !c && !m:
				out = append(out, fmt.Sprintf("the %s %q is neither covered (%s) nor listed in MISSING with a reason", kind, n, map[string]string{"route": "ROUTES", "schema": "SCHEMAS"}[kind]))
			case c && m:
				out = append(out, fmt.Sprintf("the %s %q is both covered and listed in MISSING", kind, n))
			}
		}
	}
	check("route", routes, cov.routes)
	check("schema", schemas, cov.schemas)
	for _, k := range sortedKeys(cov.routes) {
		if !slices.Contains(routes, k) {
			out = append(out, fmt.Sprintf("ROUTES names %q, which openapi.json no longer has", k))
		} else if !hasMethod(cov.routes[k]) {
			out = append(out, fmt.Sprintf("ROUTES maps %q to %s, which the client's source does not define", k, cov.routes[k]))
		}
	}
	for _, k := range sortedKeys(cov.schemas) {
		if !slices.Contains(schemas, k) {
			out = append(out, fmt.Sprintf("SCHEMAS names %q, which openapi.json no longer has", k))
		} else if !hasType(cov.schemas[k]) {
			out = append(out, fmt.Sprintf("SCHEMAS maps %q to %s, which the client's source does not define", k, cov.schemas[k]))
		}
	}
	for _, k := range sortedKeys(cov.missing) {
		if !slices.Contains(routes, k) && !slices.Contains(schemas, k) {
			out = append(out, fmt.Sprintf("MISSING names %q, which openapi.json no longer has", k))
		}
		if strings.TrimSpace(cov.missing[k]) == "" {
			out = append(out, fmt.Sprintf("MISSING gives no reason for %q", k))
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sourceOf is the text of the files under dir whose names end in one of exts.
func sourceOf(t *testing.T, dir string, exts ...string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		for _, ext := range exts {
			if !d.IsDir() && strings.HasSuffix(path, ext) {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				b.Write(data)
				b.WriteString("\n")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// defines returns a test of whether src defines a name, by the pattern
// with NAME standing for it.
func defines(src, pattern string) func(string) bool {
	return func(name string) bool {
		return regexp.MustCompile(strings.ReplaceAll(pattern, "NAME", regexp.QuoteMeta(name))).MatchString(src)
	}
}

// TestClientsCoverOpenAPI: each client (TypeScript, Python) covers every
// route and schema of openapi.json or names it as missing with a reason,
// names none the document no longer has, and defines the methods and types
// its coverage file names: a method as `  NAME(` (or `  async NAME(`,
// `  async *NAME(`) in the TypeScript client's src/*.js, `def NAME(` in the
// Python package; a type as `export interface|type|class NAME` in the
// TypeScript client's src/*.d.ts, `class NAME` or `NAME =` in the Python
// package.
func TestClientsCoverOpenAPI(t *testing.T) {
	routes, schemas := openAPIContract(t)
	clients := []struct {
		name, dir, file string
		methodExts      []string
		method          string
		typeExts        []string
		typ             string
	}{
		{"typescript", "../../clients/typescript/src", "coverage.js",
			[]string{".js"}, `(?m)^  (?:static )?(?:async )?\*?NAME\(`,
			[]string{".d.ts"}, `(?m)^export (?:declare )?(?:interface|type|class) NAME\b`},
		{"python", "../../clients/python/src/stepwise", "_coverage.py",
			[]string{".py"}, `(?m)^\s*(?:async\s+)?def\s+NAME\s*\(`,
			[]string{".py"}, `(?m)^(?:\s*class\s+NAME\b|NAME\s*(?::[^=\n]*)?=)`},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(c.dir, c.file)
			data, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				t.Fatalf("the %s client is missing: %s does not exist, so its coverage of openapi.json cannot be checked", strings.ToUpper(c.name[:1])+c.name[1:], path)
			}
			if err != nil {
				t.Fatal(err)
			}
			cov, err := parseCoverage(path, string(data))
			if err != nil {
				t.Fatal(err)
			}
			methods := defines(sourceOf(t, c.dir, c.methodExts...), c.method)
			types := defines(sourceOf(t, c.dir, c.typeExts...), c.typ)
			for _, p := range coverageProblems(cov, routes, schemas, methods, types) {
				t.Errorf("%s: %s", path, p)
			}
		})
	}
}

// TestCoverageFile: the coverage files' format, in JavaScript and Python,
// and what coverageProblems reports.
func TestCoverageFile(t *testing.T) {
	js := `// a header
export const ROUTES = {
  "GET /a": "getA",

  // a comment
  "POST /a/{id}": "postA", // trailing
};
export const SCHEMAS = {
  "A": "A",
};
export const MISSING = {};
`
	py := `"""A docstring."""
ROUTES: dict[str, str] = {
    "GET /a": "get_a",
    'POST /a/{id}': 'post_a',  # trailing
}
SCHEMAS = {
    "A": "A",
}
MISSING = {
    "B": "the client's dicts are plain \"JSON\"",
}
`
	got, err := parseCoverage("a.js", js)
	if err != nil {
		t.Fatal(err)
	}
	want := clientCoverage{routes: map[string]string{"GET /a": "getA", "POST /a/{id}": "postA"}, schemas: map[string]string{"A": "A"}, missing: map[string]string{}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("js: %v, want %v", got, want)
	}
	got, err = parseCoverage("a.py", py)
	if err != nil {
		t.Fatal(err)
	}
	want = clientCoverage{routes: map[string]string{"GET /a": "get_a", "POST /a/{id}": "post_a"}, schemas: map[string]string{"A": "A"}, missing: map[string]string{"B": `the client's dicts are plain "JSON"`}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("py: %v, want %v", got, want)
	}
	for _, bad := range []struct{ text, err string }{
		{"ROUTES = {\n  \"GET /a\":\n    \"get_a\",\n}\nSCHEMAS = {}\nMISSING = {}\n", `x:2: in ROUTES, want one "KEY": "VALUE", entry a line`},
		{"ROUTES = {}\nSCHEMAS = {}\n", "x: no MISSING map"},
		{"ROUTES = {\n", "x: ROUTES is not closed"},
		{"ROUTES = {}\nROUTES = {}\n", "x:2: ROUTES is given twice"},
		{"ROUTES = {\n\"a\": \"b\",\n\"a\": \"c\",\n}\n", `x:3: ROUTES holds "a" twice`},
	} {
		if _, err := parseCoverage("x", bad.text); err == nil || !strings.HasPrefix(err.Error(), bad.err) {
			t.Errorf("%q: error %v, want %q", bad.text, err, bad.err)
		}
	}

	cov := clientCoverage{
		routes:  map[string]string{"GET /a": "getA", "GET /gone": "gone", "POST /a": "nope"},
		schemas: map[string]string{"A": "A"},
		missing: map[string]string{"B": "later", "GET /a": "both", "C": " "},
	}
	has := func(name string) bool { return name != "nope" }
	problems := coverageProblems(cov, []string{"GET /a", "GET /b", "POST /a"}, []string{"A", "B", "D"}, has, has)
	wantProblems := []string{
		`the route "GET /a" is both covered and listed in MISSING`,
		`the route "GET /b" is neither covered (ROUTES) nor listed in MISSING with a reason`,
		`the schema "D" is neither covered (SCHEMAS) nor listed in MISSING with a reason`,
		`ROUTES names "GET /gone", which openapi.json no longer has`,
		`ROUTES maps "POST /a" to nope, which the client's source does not define`,
		`MISSING names "C", which openapi.json no longer has`,
		`MISSING gives no reason for "C"`,
	}
	if !slices.Equal(problems, wantProblems) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(wantProblems, "\n"))
	}
}
