package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileTree makes a root with files, a subdirectory and symlinks that stay
// inside or lead outside it, and a directory outside it with a secret.
func fileTree(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.txt"), "TOP SECRET")
	write(filepath.Join(root, "notes.txt"), "hello notes\n")
	write(filepath.Join(root, "sub", "a.txt"), "alpha")
	write(filepath.Join(root, "sub", "deeper", "b.txt"), "beta")
	write(filepath.Join(root, "bin.dat"), "\x00\x01\x02binary")
	link(outside, "escape")                                   // a directory outside
	link(filepath.Join(outside, "secret.txt"), "escape_file") // a file outside
	link("../"+filepath.Base(outside)+"/secret.txt", "escape_rel")
	link("notes.txt", "inside_link")                        // relative, inside
	link(filepath.Join(root, "sub"), "abs_inside")          // absolute, inside
	link(filepath.Join(outside, "new.txt"), "dangling_out") // missing target outside
	link("sub/new.txt", "dangling_in")                      // missing target inside
	return root, outside
}

func fileArgs(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	root, outside := fileTree(t)
	read := Files(FilesOptions{Root: root})[0]
	for _, tc := range []struct {
		path      string
		want, err string
	}{
		{path: "notes.txt", want: "hello notes\n"},
		{path: "./sub/../notes.txt", want: "hello notes\n"},
		{path: "sub/a.txt", want: "alpha"},
		{path: "inside_link", want: "hello notes\n"},
		{path: "abs_inside/a.txt", want: "alpha"},
		{path: "../notes.txt", err: `leads outside the root ("..")`},
		{path: "sub/../../" + filepath.Base(outside) + "/secret.txt", err: `leads outside the root ("..")`},
		{path: filepath.Join(outside, "secret.txt"), err: "is absolute"},
		{path: "/etc/passwd", err: "is absolute"},
		{path: "escape/secret.txt", err: "leads outside the root through a symlink"},
		{path: "escape_file", err: "leads outside the root through a symlink"},
		{path: "escape_rel", err: "leads outside the root through a symlink"},
		{path: "dangling_out", err: "leads outside the root through a symlink"},
		{path: "missing.txt", err: "no such file or directory"},
		{path: "dangling_in", err: "no such file or directory"},
		{path: "sub", err: "is a directory; use list_files"},
		{path: "bin.dat", err: "not a UTF-8 text file"},
		{path: "notes.txt/x", err: "not a directory"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res := run(t, read, fileArgs("path", tc.path))
			if tc.err != "" {
				wantError(t, res, tc.err)
				if strings.Contains(res.Error, "SECRET") || !filepath.IsAbs(tc.path) && strings.Contains(res.Error, outside) {
					t.Errorf("error reveals the outside: %s", res.Error)
				}
				return
			}
			if res.Error != "" || res.Output != tc.want {
				t.Errorf("got %q (error %q), want %q", res.Output, res.Error, tc.want)
			}
		})
	}
	res := run(t, read, fileArgs("path", "./sub/../notes.txt"))
	if len(res.Sources) != 1 || res.Sources[0] != "notes.txt" {
		t.Errorf("sources %q", res.Sources)
	}
	if !read.Spec().Idempotent {
		t.Error("read_file must be idempotent")
	}
}

func TestReadFileCutAndOffset(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	content := "ab€cdefgh" // € is 3 bytes at offsets 2-4
	os.WriteFile(filepath.Join(root, "f.txt"), []byte(content), 0o644)
	os.WriteFile(filepath.Join(root, "empty.txt"), nil, 0o644)
	read := Files(FilesOptions{Root: root, MaxReadBytes: 4})[0]

	res := run(t, read, fileArgs("path", "f.txt"))
	wantOutput(t, res, "ab\n[... cut: bytes 0-2 of 11 shown; call read_file with offset 2 to read on]")
	res = run(t, read, fileArgs("path", "f.txt", "offset", 2))
	wantOutput(t, res, "€c\n[... cut: bytes 2-6 of 11 shown; call read_file with offset 6")
	res = run(t, read, fileArgs("path", "f.txt", "offset", 3)) // inside €: start after it
	wantOutput(t, res, "cd\n[... cut: bytes 5-7 of 11 shown")
	res = run(t, read, fileArgs("path", "f.txt", "offset", 8))
	if res.Output != "fgh" {
		t.Errorf("tail read %q %q", res.Output, res.Error)
	}
	wantError(t, run(t, read, fileArgs("path", "f.txt", "offset", 12)), "offset 12 is past the end of f.txt (11 bytes)")
	if res := run(t, read, fileArgs("path", "empty.txt")); res.Output != "(empty file)" {
		t.Errorf("empty file: %q %q", res.Output, res.Error)
	}
	if _, err := checkCall(read, fileArgs("path", "f.txt", "offset", -1)); err == nil {
		t.Error("the core accepted a negative offset")
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	root, outside := fileTree(t)
	write := Files(FilesOptions{Root: root, MaxWriteBytes: 100})[1]
	for _, tc := range []struct {
		name, args string
		file, err  string // file: where the content must land, relative to root
	}{
		{name: "new", args: fileArgs("path", "new.txt", "content", "x"), file: "new.txt"},
		{name: "replace", args: fileArgs("path", "notes.txt", "content", "x"), file: "notes.txt"},
		{name: "in subdir", args: fileArgs("path", "sub/c.txt", "content", "x"), file: "sub/c.txt"},
		{name: "through inside link", args: fileArgs("path", "abs_inside/d.txt", "content", "x"), file: "sub/d.txt"},
		{name: "dangling inside", args: fileArgs("path", "dangling_in", "content", "x"), file: "sub/new.txt"},
		{name: "create dirs", args: fileArgs("path", "x/y/z.txt", "content", "x", "create_dirs", true), file: "x/y/z.txt"},
		{name: "missing dir", args: fileArgs("path", "p/q.txt", "content", "x"), err: "set create_dirs to true"},
		{name: "dotdot", args: fileArgs("path", "../evil.txt", "content", "x", "create_dirs", true), err: "leads outside the root"},
		{name: "absolute", args: fileArgs("path", filepath.Join(outside, "evil.txt"), "content", "x"), err: "is absolute"},
		{name: "symlinked dir", args: fileArgs("path", "escape/evil.txt", "content", "x"), err: "through a symlink"},
		{name: "symlinked dir create", args: fileArgs("path", "escape/a/evil.txt", "content", "x", "create_dirs", true), err: "through a symlink"},
		{name: "dangling outside", args: fileArgs("path", "dangling_out", "content", "x"), err: "through a symlink"},
		{name: "onto outside file", args: fileArgs("path", "escape_file", "content", "x"), err: "through a symlink"},
		{name: "a directory", args: fileArgs("path", "sub", "content", "x"), err: "not a regular file"},
		{name: "the root", args: fileArgs("path", ".", "content", "x"), err: "the root directory"},
		{name: "too big", args: fileArgs("path", "big.txt", "content", strings.Repeat("x", 101)), err: "content is 101 bytes; the limit is 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, write, tc.args)
			if tc.err != "" {
				wantError(t, res, tc.err)
				return
			}
			wantOutput(t, res, "wrote 1 bytes to ")
			if b, err := os.ReadFile(filepath.Join(root, tc.file)); err != nil || string(b) != "x" {
				t.Errorf("%s holds %q (%v)", tc.file, b, err)
			}
		})
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("something was written outside the root: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "TOP SECRET" {
		t.Errorf("the outside file changed: %q", b)
	}
	// Writing the same content again is harmless: the tool is idempotent.
	for range 2 {
		wantOutput(t, run(t, write, fileArgs("path", "again.txt", "content", "same")), "wrote 4 bytes to again.txt")
	}
	if !write.Spec().Idempotent {
		t.Error("write_file must be idempotent")
	}
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	root, outside := fileTree(t)
	list := Files(FilesOptions{Root: root})[2]
	top := strings.Join([]string{
		"abs_inside -> " + filepath.Join(root, "sub"),
		"bin.dat (9 bytes)",
		"dangling_in -> sub/new.txt",
		"dangling_out -> " + filepath.Join(outside, "new.txt"),
		"escape -> " + outside,
		"escape_file -> " + filepath.Join(outside, "secret.txt"),
		"escape_rel -> ../" + filepath.Base(outside) + "/secret.txt",
		"inside_link -> notes.txt",
		"notes.txt (12 bytes)",
		"sub/",
	}, "\n")
	res := run(t, list, `{}`)
	if res.Output != top {
		t.Errorf("got\n%s\nwant\n%s", res.Output, top)
	}
	res = run(t, list, fileArgs("path", "sub", "recursive", true))
	if want := "sub/a.txt (5 bytes)\nsub/deeper/\nsub/deeper/b.txt (4 bytes)"; res.Output != want {
		t.Errorf("recursive: got\n%s\nwant\n%s", res.Output, want)
	}
	res = run(t, list, fileArgs("path", "abs_inside"))
	if want := "sub/a.txt (5 bytes)\nsub/deeper/"; res.Output != want {
		t.Errorf("through a link: got\n%s\nwant\n%s", res.Output, want)
	}
	wantError(t, run(t, list, fileArgs("path", "escape")), "through a symlink")
	wantError(t, run(t, list, fileArgs("path", "..")), `leads outside the root ("..")`)
	wantError(t, run(t, list, fileArgs("path", "/")), "is absolute")
	wantError(t, run(t, list, fileArgs("path", "notes.txt")), "not a directory")
	wantError(t, run(t, list, fileArgs("path", "nope")), "no such file")

	os.Mkdir(filepath.Join(root, "empty"), 0o755)
	if res := run(t, list, fileArgs("path", "empty")); res.Output != "(empty directory)" {
		t.Errorf("empty: %q", res.Output)
	}
	small := Files(FilesOptions{Root: root, MaxEntries: 2})[2]
	res = run(t, small, fileArgs("recursive", true))
	wantOutput(t, res, "abs_inside -> ", "bin.dat (9 bytes)\n[... cut at 2 entries; list a subdirectory to see more]")
}

func TestFilesNeedRoot(t *testing.T) {
	t.Parallel()
	args := []string{`{"path":"x"}`, `{"path":"x","content":""}`, `{"path":"x"}`}
	for i, tool := range Files(FilesOptions{}) {
		wantError(t, runRaw(tool, args[i]), "no root directory is configured")
	}
	for i, tool := range Files(FilesOptions{Root: filepath.Join(t.TempDir(), "missing")}) {
		wantError(t, runRaw(tool, args[i]), "the root directory is unusable")
	}
}

func TestResolveTailLoop(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.Symlink("b", filepath.Join(root, "a"))
	os.Symlink("a", filepath.Join(root, "b"))
	read := Files(FilesOptions{Root: root})[0]
	wantError(t, run(t, read, fileArgs("path", "a")), "too many links")
}
