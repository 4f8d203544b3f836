package script

import (
	"errors"
	"io/fs"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

// Name is the provider's name in agent files.
const Name = "script"

// Entry is the provider's row in the provider table (shell/models).
func Entry() provider.Entry {
	return provider.Entry{
		Name: Name, GenAIName: "stepwise." + Name,
		Required: []string{"script"},
		Keys:     []string{"script"},
		Check:    check,
		New: func(b provider.Build) (shell.ModelProvider, error) {
			if b.Render {
				// Rendering reads no reply: the script need not exist.
				return (&Provider{name: b.Script}).WithOffset(b.ScriptOffset), nil
			}
			p, err := Load(b.Script)
			if err != nil {
				return nil, err
			}
			return p.WithOffset(b.ScriptOffset), nil
		},
	}
}

// check reads the script, when files are read: it must exist and parse.
func check(s provider.Settings, readFiles bool) error {
	if !readFiles {
		return nil
	}
	if _, err := Load(s.Script); errors.Is(err, fs.ErrNotExist) {
		return provider.KeyErrorf("script", "%s does not exist", s.Script)
	} else if err != nil {
		return provider.KeyErrorf("script", "%v", err)
	}
	return nil
}
