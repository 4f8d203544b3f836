package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// The portable run file; its format is described in doc.go.
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
	ID         string `json:"id"`
	Agent      string `json:"agent"`
	ConfigHash string `json:"config_hash"`
	Config     []byte `json:"config"`
	Input      string `json:"input"`
	Status     Status `json:"status"`
	Created    string `json:"created"`
	Updated    string `json:"updated"`
	Answer     string `json:"answer,omitempty"`
	FailCode   string `json:"fail_code,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ParentID   string `json:"parent_id,omitempty"`
	ParentStep int    `json:"parent_step,omitempty"`
	Steps      int    `json:"steps"`
	// AgentChanges are the run's agent changes (resume --agent), in order.
	AgentChanges []exportAgentChange `json:"agent_changes,omitempty"`
}

type exportAgentChange struct {
	Seq     int    `json:"seq"`
	Created string `json:"created"`
	Config  []byte `json:"config"`
	CRC32C  string `json:"crc32c"`
}

// sum is the change's checksum as the file carries it (see doc.go).
func (c *exportAgentChange) sum() string {
	var h summer
	h.int(int64(c.Seq))
	h.blob(c.Config)
	return fmt.Sprintf("%08x", uint32(h.sum()))
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

// sum is the step's checksum as the file carries it (see doc.go).
func (st *exportStep) sum() string {
	var h summer
	h.int(int64(st.Seq))
	h.int(int64(st.MessageCount))
	h.blob(st.Result)
	h.blob(st.Action)
	h.blob(st.State)
	h.int(int64(len(st.Messages)))
	for _, m := range st.Messages {
		h.blob(m.CBOR)
	}
	h.int(int64(len(st.Intents)))
	for _, in := range st.Intents {
		h.str(in.CallID)
		h.str(in.Tool)
		h.blob(in.Args)
		h.blob(in.Result)
	}
	return fmt.Sprintf("%08x", uint32(h.sum()))
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

func formatTime(ns int64) string { return fromNs(ns).Format(time.RFC3339Nano) }

func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixNano(), nil
}

// Export writes the run as one portable JSON file (see doc.go): the run, its
// config, and every step with its result, action, state head, the messages
// it appended and its intents, each as the CBOR bytes the store holds plus a
// readable description. Importing the file elsewhere and exporting it again
// gives the same bytes. It reads one snapshot; on an error (a corrupt step)
// what it wrote so far is incomplete.
func (s *SQLite) Export(ctx context.Context, runID string, w io.Writer) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	var created, updated int64
	var ri RunInfo
	var status, failCode string
	err = tx.QueryRowContext(ctx, `SELECT r.rk, r.id, r.agent, r.config_hash, r.config, r.input, r.status, r.created_ns,
		max(r.updated_ns, s.created_ns),
		r.answer, r.fail_code, r.reason, r.parent_id, r.parent_step, s.seq FROM runs r JOIN steps s ON s.id = `+lastStepID+`
		WHERE r.id = ?`, runID).Scan(
		&rk, &ri.ID, &ri.Agent, &ri.ConfigHash, &ri.Config, &ri.Input, &status, &created, &updated,
		&ri.Answer, &failCode, &ri.Reason, &ri.ParentID, &ri.ParentStep, &ri.LastSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("export run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	if ri.Config == nil {
		ri.Config = []byte{}
	}
	intents, err := runIntents(ctx, tx, runID, rk)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	changes, err := agentChanges(ctx, tx, runID, rk)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	er := exportRun{
		ID: ri.ID, Agent: ri.Agent, ConfigHash: ri.ConfigHash, Config: ri.Config, Input: ri.Input,
		Status: Status(status), Created: formatTime(created), Updated: formatTime(updated),
		Answer: ri.Answer, FailCode: failCode, Reason: ri.Reason, ParentID: ri.ParentID, ParentStep: ri.ParentStep,
		Steps: ri.LastSeq + 1,
	}
	for _, c := range changes {
		ec := exportAgentChange{Seq: c.Seq, Created: formatTime(c.Created.UnixNano()), Config: c.Config}
		ec.CRC32C = ec.sum()
		er.AgentChanges = append(er.AgentChanges, ec)
	}
	head, err := marshalLine(er)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"format\":%q,\"version\":%d,\n\"run\":%s,\n\"steps\":[", ExportFormat, ExportVersion, head)
	prev := 0
	err = iterateSteps(ctx, tx, runID, rk, true, func(rec StepRecord, row *stepRow, raw [][]byte) error {
		es := exportStep{
			Seq: row.seq, Created: formatTime(row.created), Result: row.result, Action: row.action, State: row.head,
			MessageCount: row.msgCount, Intents: intents[row.seq],
			Describe: exportDescribe{State: core.DescribeState(rec.State)},
		}
		if rec.Result != nil {
			es.Describe.Result = core.DescribeResult(rec.Result)
		}
		if rec.Action != nil {
			es.Describe.Action = core.DescribeAction(rec.Action)
		}
		for i := prev; i < row.msgCount; i++ {
			es.Messages = append(es.Messages, exportMessage{CBOR: raw[i], Describe: core.DescribeMessage(rec.State.Messages[i])})
		}
		prev = row.msgCount
		es.CRC32C = es.sum()
		line, err := marshalLine(es)
		if err != nil {
			return fmt.Errorf("export run %s step %d: %w", runID, row.seq, err)
		}
		if row.seq > 0 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
		bw.Write(line)
		return nil
	})
	if err != nil {
		return err
	}
	bw.WriteString("\n]}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	return nil
}

// runIntents reads every intent of the run, by step, in recorded order.
func runIntents(ctx context.Context, tx querier, runID string, rk int64) (map[int][]exportIntent, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, call_id, tool, args, started_ns, result, completed_ns, sum FROM intents
		WHERE rk = ? ORDER BY seq, ord`, rk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int][]exportIntent{}
	for rows.Next() {
		var seq int
		var in exportIntent
		var started, completed, sum int64
		if err := rows.Scan(&seq, &in.CallID, &in.Tool, &in.Args, &started, &in.Result, &completed, &sum); err != nil {
			return nil, err
		}
		if in.Args == nil {
			in.Args = []byte{}
		}
		if intentSum(rk, seq, in.CallID, in.Tool, in.Args, started, in.Result, completed) != sum {
			return nil, fmt.Errorf("%w: run %s step %d: intent %s fails its checksum", ErrCorrupt, runID, seq, in.CallID)
		}
		in.Started = formatTime(started)
		if in.Result != nil {
			in.Completed = formatTime(completed)
		}
		out[seq] = append(out[seq], in)
	}
	return out, rows.Err()
}

// Import reads a file written by Export and stores the run under the id it
// carries; a run with that id already stored is refused with ErrExists (see
// ImportAs). Every step is checked before anything is written: its
// checksum, that its state, messages, action and result decode, and that
// the steps and the message log are contiguous. It returns the run's id.
func (s *SQLite) Import(ctx context.Context, r io.Reader) (string, error) {
	return s.ImportAs(ctx, r, "")
}

// ImportAs is Import storing the run under id instead (the file's id when id
// is empty).
func (s *SQLite) ImportAs(ctx context.Context, r io.Reader, id string) (string, error) {
	var f exportFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	if f.Format != ExportFormat {
		return "", fmt.Errorf("import: format %q, want %q", f.Format, ExportFormat)
	}
	if f.Version != ExportVersion {
		return "", fmt.Errorf("import: format version %d, this build reads %d", f.Version, ExportVersion)
	}
	if id == "" {
		id = f.Run.ID
	}
	if id == "" {
		return "", errors.New("import: the run has no id")
	}
	p, err := checkImport(id, &f)
	if err != nil {
		return "", err
	}
	err = s.write(ctx, "import run "+id, func(tx *wtx) error {
		rk, err := insertRun(ctx, tx, p.run)
		if err != nil {
			return err
		}
		for i, c := range f.Run.AgentChanges {
			if _, err := tx.ExecContext(ctx, `INSERT INTO agent_changes (rk, seq, created_ns, config, sum) VALUES (?, ?, ?, ?, ?)`,
				rk, c.Seq, p.changeTimes[i], c.Config, agentChangeSum(rk, c.Seq, p.changeTimes[i], c.Config)); err != nil {
				return fmt.Errorf("agent change %d: %w", i, err)
			}
		}
		for i := range f.Steps {
			st := &f.Steps[i]
			row := stepRow{seq: st.Seq, created: p.created[i], msgCount: st.MessageCount, msgSum: p.msgSums[i],
				action: st.Action, result: st.Result, head: st.State}
			for _, m := range st.Messages {
				row.msgs = append(row.msgs, m.CBOR...)
			}
			if err := tx.insertStep(&row, rk); err != nil {
				return fmt.Errorf("step %d: %w", st.Seq, err)
			}
			if closesSegment(row.seq) {
				if err := writeSegment(ctx, tx, id, rk, &row); err != nil {
					return fmt.Errorf("step %d: %w", st.Seq, err)
				}
			}
			for j, in := range st.Intents {
				t := p.intentTimes[i][j]
				if in.Args == nil {
					in.Args = []byte{}
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO intents (rk, seq, call_id, tool, args, started_ns, result, completed_ns, sum)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, rk, st.Seq, in.CallID, in.Tool, in.Args, t[0], in.Result, t[1],
					intentSum(rk, st.Seq, in.CallID, in.Tool, in.Args, t[0], in.Result, t[1])); err != nil {
					return fmt.Errorf("step %d: intent %s: %w", st.Seq, in.CallID, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// importPlan is a checked import, ready to write.
type importPlan struct {
	run         runRow
	created     []int64
	msgSums     []int64 // each step's checksum of its last message
	intentTimes [][][2]int64
	changeTimes []int64
}

// checkImport validates the whole file before anything is written.
func checkImport(id string, f *exportFile) (*importPlan, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("import run %s: %w: %s", id, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	fr := f.Run
	if !fr.Status.Valid() {
		return nil, fail("unknown status %q", fr.Status)
	}
	if len(f.Steps) == 0 || fr.Steps != len(f.Steps) {
		return nil, fail("the file holds %d steps, the run says %d", len(f.Steps), fr.Steps)
	}
	p := &importPlan{run: runRow{
		id: id, agent: fr.Agent, configHash: fr.ConfigHash, config: fr.Config, input: fr.Input, status: fr.Status,
		answer: fr.Answer, failCode: core.FailCode(fr.FailCode), reason: fr.Reason, parentID: fr.ParentID, parentStep: fr.ParentStep,
	}}
	var err error
	if p.run.created, err = parseTime(fr.Created); err != nil {
		return nil, fail("created: %v", err)
	}
	if p.run.updated, err = parseTime(fr.Updated); err != nil {
		return nil, fail("updated: %v", err)
	}
	for i := range fr.AgentChanges {
		c := &fr.AgentChanges[i]
		if c.CRC32C != c.sum() {
			return nil, fail("agent change %d: checksum %s, the contents give %s", i, c.CRC32C, c.sum())
		}
		if c.Seq < 0 || c.Seq >= len(f.Steps) || (i > 0 && c.Seq < fr.AgentChanges[i-1].Seq) {
			return nil, fail("agent change %d: at step %d, out of order or past the run's steps", i, c.Seq)
		}
		if c.Config == nil {
			c.Config = []byte{}
		}
		t, err := parseTime(c.Created)
		if err != nil {
			return nil, fail("agent change %d: created: %v", i, err)
		}
		p.changeTimes = append(p.changeTimes, t)
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
		p.created = append(p.created, created)
		if st.MessageCount != len(log)+len(st.Messages) {
			return nil, at("message_count %d, but %d before and %d appended", st.MessageCount, len(log), len(st.Messages))
		}
		for j, m := range st.Messages {
			if log, err = decodeMessages(m.CBOR, 1, false, log, nil); err != nil {
				return nil, at("message %d: %v", len(log), err)
			}
			if enc, err := msgEnc.Marshal(log[len(log)-1]); err != nil || !bytes.Equal(enc, m.CBOR) {
				return nil, at("message %d is not canonical CBOR", st.MessageCount-len(st.Messages)+j)
			}
			msgSum = messageSum(m.CBOR)
		}
		p.msgSums = append(p.msgSums, msgSum)
		state, err := core.DecodeState(st.State)
		if err != nil {
			return nil, at("state: %v", err)
		}
		if state.Messages != nil {
			return nil, at("state holds messages; they belong in messages")
		}
		state.Messages = log[:len(log):len(log)]
		if st.Action != nil {
			if _, err := core.DecodeAction(st.Action, state); err != nil {
				return nil, at("action: %v", err)
			}
		}
		if st.Result != nil {
			if _, err := core.DecodeResult(st.Result); err != nil {
				return nil, at("result: %v", err)
			}
		}
		var times [][2]int64
		for _, in := range st.Intents {
			if in.CallID == "" {
				return nil, at("intent without call id")
			}
			var t [2]int64
			if t[0], err = parseTime(in.Started); err != nil {
				return nil, at("intent %s: started: %v", in.CallID, err)
			}
			if in.Result != nil {
				var r core.ToolResult
				if err := msgDec.Unmarshal(in.Result, &r); err != nil {
					return nil, at("intent %s: result: %v", in.CallID, err)
				}
				if t[1], err = parseTime(in.Completed); err != nil {
					return nil, at("intent %s: completed: %v", in.CallID, err)
				}
			}
			times = append(times, t)
		}
		p.intentTimes = append(p.intentTimes, times)
	}
	return p, nil
}
