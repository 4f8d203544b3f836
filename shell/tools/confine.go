package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symlinks followed while resolving one path.
const maxLinks = 40

// confined is a root directory opened for one call. Paths are first
// resolved and checked here, for clear errors; every access then goes
// through an os.Root, which refuses escapes by construction (also when the
// tree changes between the check and the access).
type confined struct {
	root *os.Root
	abs  string // the root's absolute path, as configured
	real string // abs with its symlinks resolved, once resolve needed it
}

// openConfined opens dir as the root of one call.
func openConfined(dir string) (*confined, error) {
	if dir == "" {
		return nil, errors.New("no root directory is configured")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("the root directory is unusable: %v", errText(err))
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
	f, err := c.root.Open(filepath.Clean(p))
	if err != nil {
		return nil
	}
	return f
}

func (c *confined) Close() error { return c.root.Close() }

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
