package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxFileBytes bounds an agent file: 1 MiB, far above any prompt a model's
// context holds (about 250k tokens) and well under the state limit
// (core.DefaultLimits().MaxStateBytes, 8 MiB) the system prompt must fit
// in. A larger file is refused before it is read whole or stored.
const MaxFileBytes = 1 << 20

// ErrTooLarge marks an agent file over MaxFileBytes; such an error wraps
// ErrInvalid too.
var ErrTooLarge = errors.New("agent file too large")

// ReadFile reads the agent file at path, refusing one over MaxFileBytes
// (ErrTooLarge) from its size before reading it, and reading at most
// MaxFileBytes+1 bytes of a file that grows or is not regular (a pipe).
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read agent: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, tooLarge(path, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read agent: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(path, -1)
	}
	return data, nil
}

// tooLarge is the error of an agent file over the limit; size is -1 when
// unknown (only "more than the limit" was read).
func tooLarge(name string, size int64) error {
	got := "more than that"
	if size >= 0 {
		got = fmt.Sprintf("%d bytes", size)
	}
	return fmt.Errorf("%w: %w: %s: an agent file may hold at most %d bytes (1 MiB) and this one is %s; move long reference text into a tool or the memory",
		ErrInvalid, ErrTooLarge, name, MaxFileBytes, got)
}
