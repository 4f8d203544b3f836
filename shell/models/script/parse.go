package script

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// maxLine bounds one line of a script.
const maxLine = 16 << 20

// line is one reply as written in a script.
type line struct {
	Text         string     `json:"text"`
	ToolCalls    []lineCall `json:"tool_calls"`
	FinishReason string     `json:"finish_reason"`
	Usage        core.Usage `json:"usage"`
	Error        *string    `json:"error"`
	DelayMS      int        `json:"delay_ms"`
}

type lineCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// reply is one parsed line: a model reply, or a provider error.
type reply struct {
	line  int // 1-based line number in the file
	reply core.ModelReply
	err   string
	isErr bool
	delay time.Duration // how long the call takes before it answers
}

// parse reads the replies of a script; errors name the line.
func parse(r io.Reader, name string) ([]reply, error) {
	var out []reply
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "//") {
			continue
		}
		rep, err := parseLine([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("script %q line %d: %w", name, n, err)
		}
		rep.line = n
		out = append(out, rep)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("script %q after line %d: %w", name, n, err)
	}
	return out, nil
}

func parseLine(text []byte) (reply, error) {
	if text[0] != '{' {
		return reply{}, fmt.Errorf("a reply must be a JSON object, found %.40q", text)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	var l line
	if err := dec.Decode(&l); err != nil {
		return reply{}, describe(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return reply{}, errors.New("more than one JSON value on the line")
	}
	if l.DelayMS < 0 || l.DelayMS > 600_000 {
		return reply{}, fmt.Errorf("delay_ms %d: want 0 to 600000", l.DelayMS)
	}
	delay := time.Duration(l.DelayMS) * time.Millisecond
	if l.Error != nil {
		if l.Text != "" || l.ToolCalls != nil || l.FinishReason != "" || l.Usage != (core.Usage{}) {
			return reply{}, errors.New(`"error" cannot be combined with other keys`)
		}
		return reply{err: *l.Error, isErr: true, delay: delay}, nil
	}
	rep := reply{reply: core.ModelReply{Text: l.Text, FinishReason: l.FinishReason, Usage: l.Usage}, delay: delay}
	for i, c := range l.ToolCalls {
		args, err := arguments(c.Arguments)
		if err != nil {
			return reply{}, fmt.Errorf("tool_calls[%d]: %w", i, err)
		}
		rep.reply.Calls = append(rep.reply.Calls, core.NativeCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return rep, nil
}

// arguments turns the "arguments" value into the text the model would send:
// an object as compact JSON, a string verbatim, nothing as "{}".
func arguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}", nil
	}
	switch raw[0] {
	case '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", err
		}
		return b.String(), nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	return "", fmt.Errorf("arguments must be a JSON object or a string holding the arguments' text, not %s", raw)
}

// describe rewords encoding/json's errors for a script's author.
func describe(err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && typ.Field != "" {
		return fmt.Errorf("%q must be %s, not a JSON %s", typ.Field, typeName(typ.Type.Kind().String()), typ.Value)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s (keys: text, tool_calls, finish_reason, usage, error; in tool_calls: id, name, arguments; in usage: prompt_tokens, completion_tokens)", msg)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the JSON object is incomplete")
	}
	return fmt.Errorf("not a JSON object: %w", err)
}

func typeName(kind string) string {
	switch kind {
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	case "int":
		return "an integer"
	}
	return "a " + kind
}
