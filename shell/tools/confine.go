package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// maxLinks bounds the symlinks followed while resolving one path.
const maxLinks = 40

// confined is a root directory as one call sees it. Paths are first
// resolved and checked here, for clear errors; every access then goes
// through an os.Root, which refuses escapes by construction (also when the
// tree changes between the check and the access).
type confined struct {
	root *os.Root
	abs  string // the root's absolute path, as configured
	real string // abs with its symlinks resolved, once resolve needed it
}

// rootDir is the root directory of the file tools of one Files call, held
// open between calls: opening it costs a call several system calls, and
// read_file is among an agent's most frequent tools. Every call still
// looks the directory up by its path, so that a root removed, or replaced
// by another directory, is seen at once, as when every call opened it.
type rootDir struct {
	dir  string                 // as configured
	abs  func() (string, error) // dir made absolute, once
	mu   sync.Mutex             // guards root and info
	root *os.Root               // nil until a call opened it; closed by its finalizer once dropped
	info fs.FileInfo            // the directory root holds, to tell it from one put in its place
}

func newRootDir(dir string) *rootDir {
	return &rootDir{dir: dir, abs: sync.OnceValues(func() (string, error) { return filepath.Abs(dir) })}
}

// open returns the root for one call. No lock is held across a system
// call: calls at once look the path up at once.
func (d *rootDir) open() (*confined, error) {
	if d.dir == "" {
		return nil, errors.New("no root directory is configured")
	}
	abs, err := d.abs()
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("the root directory is unusable: %v", errText(err))
	}
	d.mu.Lock()
	r := d.root
	same := r != nil && os.SameFile(fi, d.info)
	d.mu.Unlock()
	if !same {
		if r, err = os.OpenRoot(abs); err != nil {
			return nil, fmt.Errorf("the root directory is unusable: %v", errText(err))
		}
		// The directory opened, which may differ from the one just
		// looked up if it was replaced in between.
		info, err := r.Stat(".")
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("the root directory is unusable: %v", errText(err))
		}
		// The root it replaces, which another call may still use, is
		// left to its finalizer.
		d.mu.Lock()
		d.root, d.info = r, info
		d.mu.Unlock()
	}
	return &confined{root: r, abs: abs}, nil
}

// openLocal opens p straight through the root when it can: a clean
// relative path that reaches a file beneath the root through relative
// symlinks only, as most do, is the file resolve would lead to, without
// resolving every component of the root's own path first. Nil when it
// cannot; resolve then says why, or finds the way (an absolute symlink
// that leads back inside).
func (c *confined) openLocal(p string) *os.File {
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return nil
	}
	f, err := c.open(filepath.Clean(p))
	if err != nil {
		return nil
	}
	return f
}

// open opens rel, a path resolve returned, for reading. Non-blocking:
// opening a FIFO for reading would otherwise wait for a writer, and a call
// that meets one says it is not a regular file. It also spares the runtime
// setting the mode and clearing it again on every open (a regular file's
// reads ignore it).
func (c *confined) open(rel string) (*os.File, error) {
	return c.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// resolve maps a path given by the model to a clean path relative to the
// root with every existing symlink resolved ("." is the root itself). It
// refuses absolute paths, ".." that climbs out of the root, and symlinks
// whose target lies outside the root; a path whose tail does not exist yet
// is resolved as far as it exists.
func (c *confined) resolve(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("the path is empty; give a path relative to the root")
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("path %q is absolute; give a path relative to the root", p)
	}
	clean := filepath.Clean(p)
	if clean != "." && !filepath.IsLocal(clean) {
		return "", fmt.Errorf("path %q leads outside the root (\"..\"); give a path inside it", p)
	}
	if c.real == "" {
		real, err := filepath.EvalSymlinks(c.abs)
		if err != nil {
			return "", fmt.Errorf("the root directory is unusable: %v", errText(err))
		}
		c.real = real
	}
	links := 0
	full, err := resolveTail(filepath.Join(c.real, clean), &links)
	if err != nil {
		return "", fmt.Errorf("path %q: %v", p, errText(err))
	}
	rel, err := filepath.Rel(c.real, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leads outside the root through a symlink; only paths inside the root are allowed", p)
	}
	return rel, nil
}

// resolveTail is filepath.EvalSymlinks for a path whose tail may not exist:
// the existing prefix is resolved (following dangling symlinks by hand) and
// the missing components are appended.
func resolveTail(p string, links *int) (string, error) {
	if *links > maxLinks {
		return "", errors.New("too many links")
	}
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if fi, lerr := os.Lstat(p); lerr == nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return "", err
		}
		target, err := os.Readlink(p) // a dangling symlink: follow it by hand
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		*links++
		return resolveTail(target, links)
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	real, err = resolveTail(parent, links)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, filepath.Base(p)), nil
}

// errText is the reason of a path error without the path, which may name
// directories outside the root.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
