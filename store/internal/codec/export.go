package codec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The portable run file (its format is described in store/doc.go). Every
// store writes it through an Exporter and reads it through ReadImport, so
// the same run exports to the same bytes from any store.
const (
	ExportFormat  = "stepwise-run"
	ExportVersion = 1
)

type exportFile struct {
	Format  string       `json:"format"`
	Version int          `json:"version"`
	Run     exportRun    `json:"run"`
	Steps   []exportStep `json:"steps"`
}

type exportRun struct {
	ID         string       `json:"id"`
	Agent      string       `json:"agent"`
	ConfigHash string       `json:"config_hash"`
	Config     []byte       `json:"config"`
	Input      string       `json:"input"`
	Status     store.Status `json:"status"`
	Created    string       `json:"created"`
	Updated    string       `json:"updated"`
	Answer     string       `json:"answer,omitempty"`
	FailCode   string       `json:"fail_code,omitempty"`
	Reason     string       `json:"reason,omitempty"`
	ParentID   string       `json:"parent_id,omitempty"`
	ParentStep int          `json:"parent_step,omitempty"`
	// RetryAt is, for a stalled run, when the next attempt may start.
	RetryAt string `json:"retry_at,omitempty"`
	Steps   int    `json:"steps"`
	// AgentChanges are the run's agent changes (resume --agent), in order.
	AgentChanges []exportAgentChange `json:"agent_changes,omitempty"`
}

type exportAgentChange struct {
	Seq     int    `json:"seq"`
	Created string `json:"created"`
	Config  []byte `json:"config"`
	CRC32C  string `json:"crc32c"`
}

// sum is the change's checksum as the file carries it.
func (c *exportAgentChange) sum() string {
	var h Summer
	h.Int(int64(c.Seq))
	h.Blob(c.Config)
	return fmt.Sprintf("%08x", uint32(h.Sum()))
}

type exportStep struct {
	Seq          int             `json:"seq"`
	Created      string          `json:"created"`
	Describe     exportDescribe  `json:"describe"`
	Result       []byte          `json:"result,omitempty"`
	Action       []byte          `json:"action,omitempty"`
	State        []byte          `json:"state"`
	MessageCount int             `json:"message_count"`
	Messages     []exportMessage `json:"messages,omitempty"`
	Intents      []exportIntent  `json:"intents,omitempty"`
	CRC32C       string          `json:"crc32c"`
}

type exportDescribe struct {
	Result string `json:"result,omitempty"`
	Action string `json:"action,omitempty"`
	State  string `json:"state"`
}

type exportMessage struct {
	CBOR     []byte `json:"cbor"`
	Describe string `json:"describe"`
}

type exportIntent struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Args      []byte `json:"args"`
	Started   string `json:"started"`
	Result    []byte `json:"result,omitempty"`
	Completed string `json:"completed,omitempty"`
}

// sum is the step's checksum as the file carries it.
func (st *exportStep) sum() string {
	var h Summer
	h.Int(int64(st.Seq))
	h.Int(int64(st.MessageCount))
	h.Blob(st.Result)
	h.Blob(st.Action)
	h.Blob(st.State)
	h.Int(int64(len(st.Messages)))
	for _, m := range st.Messages {
		h.Blob(m.CBOR)
	}
	h.Int(int64(len(st.Intents)))
	for _, in := range st.Intents {
		h.Str(in.CallID)
		h.Str(in.Tool)
		h.Blob(in.Args)
		h.Blob(in.Result)
	}
	return fmt.Sprintf("%08x", uint32(h.Sum()))
}

// marshalLine is json.Marshal without HTML escaping (describe texts quote
// what models and tools wrote, tags included).
func marshalLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// FormatTime is a stored time as the file writes it.
func FormatTime(ns int64) string { return FromNs(ns).Format(time.RFC3339Nano) }

func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixNano(), nil
}

// RunRow is a run as a store writes it at creation or import, and as an
// export reads it: times in nanoseconds, the config it started with.
type RunRow struct {
	ID, Agent, ConfigHash string
	Config                []byte
	Input                 string
	Status                store.Status
	Created, Updated      int64
	Answer                string
	FailCode              core.FailCode
	Reason                string
	ParentID              string
	ParentStep            int
	// Retry is, for a stalled run, when the next attempt may start (0:
	// none).
	Retry int64
	// LastSeq is the run's last step (for an export).
	LastSeq int
	// Turns is the user turns the run has taken (store.RunInfo.Turns): an
	// import counts them from its steps, as the file does not carry them.
	Turns int
	// Lease is the lease it is created with (none for an import).
	Lease store.Lease
}

// IntentRow is an intent as stored: times in nanoseconds, the result's
// CBOR (nil while started).
type IntentRow struct {
	CallID, Tool       string
	Args               []byte
	Started, Completed int64
	Result             []byte
}

// ChangeRow is an agent change as stored.
type ChangeRow struct {
	Seq     int
	Created int64
	Config  []byte
}

// Exporter writes the portable file of one run: Begin, then Step for every
// step in order, then End.
type Exporter struct {
	w       *bufio.Writer
	intents map[int][]IntentRow
	prev    int
	runID   string
}

// Begin writes the run's head.
func Begin(w io.Writer, r RunRow, changes []ChangeRow, intents map[int][]IntentRow) (*Exporter, error) {
	er := exportRun{
		ID: r.ID, Agent: r.Agent, ConfigHash: r.ConfigHash, Config: nonNil(r.Config), Input: r.Input,
		Status: r.Status, Created: FormatTime(r.Created), Updated: FormatTime(r.Updated),
		Answer: r.Answer, FailCode: string(r.FailCode), Reason: r.Reason, ParentID: r.ParentID, ParentStep: r.ParentStep,
		Steps: r.LastSeq + 1,
	}
	if r.Retry != 0 {
		er.RetryAt = FormatTime(r.Retry)
	}
	for _, c := range changes {
		ec := exportAgentChange{Seq: c.Seq, Created: FormatTime(c.Created), Config: nonNil(c.Config)}
		ec.CRC32C = ec.sum()
		er.AgentChanges = append(er.AgentChanges, ec)
	}
	head, err := marshalLine(er)
	if err != nil {
		return nil, fmt.Errorf("export run %s: %w", r.ID, err)
	}
	e := &Exporter{w: bufio.NewWriter(w), intents: intents, runID: r.ID}
	fmt.Fprintf(e.w, "{\"format\":%q,\"version\":%d,\n\"run\":%s,\n\"steps\":[", ExportFormat, ExportVersion, head)
	return e, nil
}

// Step writes one step: its opened row, its record, and the encodings of
// the log's messages so far.
func (e *Exporter) Step(row *Row, rec store.StepRecord, raw [][]byte) error {
	es := exportStep{
		Seq: row.Seq, Created: FormatTime(row.Created), Result: row.Result, Action: row.Action, State: row.Head,
		MessageCount: row.MsgCount, Describe: exportDescribe{State: core.DescribeState(rec.State)},
	}
	if row.Tools != nil {
		// The file carries the whole action, its tools included.
		b, err := core.EncodeAction(rec.Action)
		if err != nil {
			return fmt.Errorf("export run %s step %d: %w", e.runID, row.Seq, err)
		}
		es.Action = b
	}
	for _, in := range e.intents[row.Seq] {
		ei := exportIntent{CallID: in.CallID, Tool: in.Tool, Args: nonNil(in.Args), Started: FormatTime(in.Started), Result: in.Result}
		if in.Result != nil {
			ei.Completed = FormatTime(in.Completed)
		}
		es.Intents = append(es.Intents, ei)
	}
	if rec.Result != nil {
		es.Describe.Result = core.DescribeResult(rec.Result)
	}
	if rec.Action != nil {
		es.Describe.Action = core.DescribeAction(rec.Action)
	}
	for i := e.prev; i < row.MsgCount; i++ {
		es.Messages = append(es.Messages, exportMessage{CBOR: raw[i], Describe: core.DescribeMessage(rec.State.Messages[i])})
	}
	e.prev = row.MsgCount
	es.CRC32C = es.sum()
	line, err := marshalLine(es)
	if err != nil {
		return fmt.Errorf("export run %s step %d: %w", e.runID, row.Seq, err)
	}
	if row.Seq > 0 {
		e.w.WriteByte(',')
	}
	e.w.WriteByte('\n')
	e.w.Write(line)
	return nil
}

// End finishes the file.
func (e *Exporter) End() error {
	e.w.WriteString("\n]}\n")
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("export run %s: %w", e.runID, err)
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ImportPlan is a checked import, ready to write in one transaction: the
// run, its step rows (sealed, their checksums left to the store, which
// knows the run's key), the intents of each step, the agent changes and
// the tool lists the rows refer to (by digest).
type ImportPlan struct {
	Run       RunRow
	Rows      []Row
	Intents   [][]IntentRow
	Changes   []ChangeRow
	ToolLists map[string][]byte
}

// ReadImport reads and checks a file written by an Exporter, for storing
// the run under id (the file's id when empty). Every step is checked before
// anything is written: its checksum, that its state, messages, action and
// result decode, that messages are canonical, and that the steps and the
// message log are contiguous.
func ReadImport(r io.Reader, id string) (*ImportPlan, error) {
	var f exportFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if f.Format != ExportFormat {
		return nil, fmt.Errorf("import: format %q, want %q", f.Format, ExportFormat)
	}
	if f.Version != ExportVersion {
		return nil, fmt.Errorf("import: format version %d, this build reads %d", f.Version, ExportVersion)
	}
	if id == "" {
		id = f.Run.ID
	}
	if id == "" {
		return nil, errors.New("import: the run has no id")
	}
	return checkImport(id, &f)
}

// checkImport validates the whole file before anything is written.
func checkImport(id string, f *exportFile) (*ImportPlan, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("import run %s: %w: %s", id, store.ErrCorrupt, fmt.Sprintf(format, args...))
	}
	fr := f.Run
	if !fr.Status.Valid() {
		return nil, fail("unknown status %q", fr.Status)
	}
	if len(f.Steps) == 0 || fr.Steps != len(f.Steps) {
		return nil, fail("the file holds %d steps, the run says %d", len(f.Steps), fr.Steps)
	}
	p := &ImportPlan{Run: RunRow{
		ID: id, Agent: fr.Agent, ConfigHash: fr.ConfigHash, Config: nonNil(fr.Config), Input: fr.Input, Status: fr.Status,
		Answer: fr.Answer, FailCode: core.FailCode(fr.FailCode), Reason: fr.Reason, ParentID: fr.ParentID, ParentStep: fr.ParentStep,
		LastSeq: len(f.Steps) - 1,
	}, ToolLists: map[string][]byte{}}
	var err error
	if p.Run.Created, err = parseTime(fr.Created); err != nil {
		return nil, fail("created: %v", err)
	}
	if p.Run.Updated, err = parseTime(fr.Updated); err != nil {
		return nil, fail("updated: %v", err)
	}
	if fr.RetryAt != "" {
		if p.Run.Retry, err = parseTime(fr.RetryAt); err != nil {
			return nil, fail("retry_at: %v", err)
		}
	}
	for i := range fr.AgentChanges {
		c := &fr.AgentChanges[i]
		if c.CRC32C != c.sum() {
			return nil, fail("agent change %d: checksum %s, the contents give %s", i, c.CRC32C, c.sum())
		}
		if c.Seq < 0 || c.Seq >= len(f.Steps) || (i > 0 && c.Seq < fr.AgentChanges[i-1].Seq) {
			return nil, fail("agent change %d: at step %d, out of order or past the run's steps", i, c.Seq)
		}
		t, err := parseTime(c.Created)
		if err != nil {
			return nil, fail("agent change %d: created: %v", i, err)
		}
		p.Changes = append(p.Changes, ChangeRow{Seq: c.Seq, Created: t, Config: nonNil(c.Config)})
	}
	var log []core.Message
	var msgSum int64
	for i := range f.Steps {
		st := &f.Steps[i]
		at := func(format string, args ...any) error {
			return fail("step %d: %s", i, fmt.Sprintf(format, args...))
		}
		if st.Seq != i {
			return nil, at("has seq %d", st.Seq)
		}
		if st.CRC32C != st.sum() {
			return nil, at("checksum %s, the contents give %s", st.CRC32C, st.sum())
		}
		if (i == 0) != (st.Action == nil) {
			return nil, at("step 0 and only step 0 has no action")
		}
		created, err := parseTime(st.Created)
		if err != nil {
			return nil, at("created: %v", err)
		}
		if st.MessageCount != len(log)+len(st.Messages) {
			return nil, at("message_count %d, but %d before and %d appended", st.MessageCount, len(log), len(st.Messages))
		}
		var msgs []byte
		for j, m := range st.Messages {
			if log, err = DecodeMessages(m.CBOR, 1, false, log, nil); err != nil {
				return nil, at("message %d: %v", len(log), err)
			}
			if enc, err := msgEnc.Marshal(log[len(log)-1]); err != nil || !bytes.Equal(enc, m.CBOR) {
				return nil, at("message %d is not canonical CBOR", st.MessageCount-len(st.Messages)+j)
			}
			msgSum = MessageSum(m.CBOR)
			msgs = append(msgs, m.CBOR...)
		}
		state, err := core.DecodeState(st.State)
		if err != nil {
			return nil, at("state: %v", err)
		}
		if state.Messages != nil {
			return nil, at("state holds messages; they belong in messages")
		}
		state.Messages = log[:len(log):len(log)]
		if i == 0 {
			p.Run.Turns = state.UserTurns()
		}
		row := Row{Seq: st.Seq, Created: created, MsgCount: st.MessageCount, MsgSum: msgSum,
			Action: st.Action, Result: st.Result, Head: st.State, Msgs: msgs}
		if st.Action != nil {
			a, err := core.DecodeAction(st.Action, state)
			if err != nil {
				return nil, at("action: %v", err)
			}
			if m, ok := a.(core.RequestModelCall); ok && len(m.Tools) > 0 {
				// Stored by reference, as a checkpoint stores it.
				list := core.AppendTools(nil, m.Tools)
				row.Tools = ToolListSum(list)
				p.ToolLists[string(row.Tools)] = list
				m.Tools = nil
				if row.Action, err = core.EncodeAction(m); err != nil {
					return nil, at("action: %v", err)
				}
			}
		}
		if st.Result != nil {
			r, err := core.DecodeResult(st.Result)
			if err != nil {
				return nil, at("result: %v", err)
			}
			if _, ok := r.(core.UserMessage); ok {
				p.Run.Turns++
			}
		}
		row.Seal()
		p.Rows = append(p.Rows, row)
		var intents []IntentRow
		for _, in := range st.Intents {
			if in.CallID == "" {
				return nil, at("intent without call id")
			}
			ir := IntentRow{CallID: in.CallID, Tool: in.Tool, Args: nonNil(in.Args), Result: in.Result}
			if ir.Started, err = parseTime(in.Started); err != nil {
				return nil, at("intent %s: started: %v", in.CallID, err)
			}
			if in.Result != nil {
				var r core.ToolResult
				if err := msgDec.Unmarshal(in.Result, &r); err != nil {
					return nil, at("intent %s: result: %v", in.CallID, err)
				}
				if ir.Completed, err = parseTime(in.Completed); err != nil {
					return nil, at("intent %s: completed: %v", in.CallID, err)
				}
			}
			intents = append(intents, ir)
		}
		p.Intents = append(p.Intents, intents)
	}
	return p, nil
}

// DecodeIntentResult decodes an intent's stored result.
func DecodeIntentResult(b []byte) (core.ToolResult, error) {
	var r core.ToolResult
	err := msgDec.Unmarshal(b, &r)
	return r, err
}

// EncodeIntentResult encodes an intent's result for storing.
func EncodeIntentResult(r core.ToolResult) ([]byte, error) { return msgEnc.Marshal(r) }
