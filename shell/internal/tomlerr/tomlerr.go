// Package tomlerr words the errors of decoding a TOML file strictly (with
// go-toml's DisallowUnknownFields) as file:line:col messages.
package tomlerr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Wrap returns err, from decoding the file name, as kind: each unknown key
// and a syntax or type error at its line and column.
func Wrap(kind error, name string, err error) error {
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) {
		msgs := make([]string, 0, len(sme.Errors))
		for _, e := range sme.Errors {
			row, col := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: unknown key %q", name, row, col, strings.Join(e.Key(), ".")))
		}
		return fmt.Errorf("%w: %s", kind, strings.Join(msgs, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("%w: %s:%d:%d: %s", kind, name, row, col, de.Error())
	}
	return fmt.Errorf("%w: %s: %v", kind, name, err)
}
