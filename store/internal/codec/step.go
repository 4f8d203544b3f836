package codec

import (
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Tail is what a run's last step left: the run's key and status, the step's
// seq, and where the message log stands (the count, and the checksum of
// the last message's encoding, for the append-only check).
type Tail struct {
	RK       int64
	Status   store.Status
	Seq      int
	MsgCount int
	MsgSum   int64
}

// Tail is the run's tail once r is its last step.
func (r *Row) Tail(rk int64, status store.Status) Tail {
	return Tail{RK: rk, Status: status, Seq: r.Seq, MsgCount: r.MsgCount, MsgSum: r.MsgSum}
}

// ErrNoAction reports a checkpoint without an action.
var ErrNoAction = errors.New("no action")

// MaxSeq is the largest step number a run may reach.
const MaxSeq = 1<<32 - 1

// CheckCheckpoint checks what can be checked of cp before its run is read.
func CheckCheckpoint(cp store.Checkpoint) error {
	if cp.Seq < 1 || cp.Seq > MaxSeq {
		return fmt.Errorf("%w: seq %d (step 0 is written by CreateRun)", store.ErrSeq, cp.Seq)
	}
	if cp.Action == nil {
		return ErrNoAction
	}
	if cp.Delivered < 0 || cp.Delivered > 0 && !TakesTurn(cp) {
		return fmt.Errorf("delivered message %d with a result %T: a delivered message is a core.UserMessage", cp.Delivered, cp.Result)
	}
	return nil
}

// TakesTurn reports whether cp's result is a user message: a step that
// counts a turn (store.RunInfo.Turns) and may fold in a message of the
// run's inbox.
func TakesTurn(cp store.Checkpoint) bool {
	_, ok := cp.Result.(core.UserMessage)
	return ok
}

// Ended is the error of a checkpoint of cp on a run whose last step, seq,
// left it with status (nil when the run goes on). A completed run goes on
// with a user message (the conversation's next turn) or a cancellation
// (which closes it); a failed or cancelled run has ended for good.
func Ended(status store.Status, seq int, cp store.Checkpoint) error {
	if !status.Ended() {
		return nil
	}
	if status == store.StatusCompleted {
		switch cp.Result.(type) {
		case core.UserMessage, core.Cancelled:
			return nil
		}
	}
	return fmt.Errorf("%w (%s at step %d)", store.ErrEnded, status, seq)
}

// EncodeHead appends the encoding of st without its messages to dst. It
// checks that the encoding is well-formed CBOR with valid UTF-8 text (a
// state that could not be loaded back is refused now rather than found
// later). That the state holds core's own invariants is core's business.
func EncodeHead(dst []byte, st core.State) ([]byte, error) {
	st.Messages = nil
	start := len(dst)
	dst = core.AppendState(dst, st)
	if err := CheckCBOR(dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("the state would not load back: %w", err)
	}
	return dst, nil
}

// CheckMessages checks that freshly encoded messages will decode (see
// EncodeHead).
func CheckMessages(body []byte, n int) error {
	if err := CheckCBORSeq(body, n); err != nil {
		return fmt.Errorf("messages would not load back: %w", err)
	}
	return nil
}

// Build builds the row of cp, the step after the one t describes, created
// at the given time, encoding into buf and compressing into spare (both
// reused when large enough; Row.Buf and the returned spare are the grown
// buffers). It checks that the state's messages extend the log the run
// holds (store.ErrNotAppend). A model call's tool list is stored by
// reference through tools (nil: inline).
func Build(buf, spare []byte, t Tail, cp store.Checkpoint, created int64, tools *ToolLists) (row Row, outSpare []byte, err error) {
	row = Row{Seq: cp.Seq, Created: created}
	b := buf[:0]
	defer func() { row.Buf = b }()
	action := cp.Action
	if m, ok := action.(core.RequestModelCall); ok && len(m.Tools) > 0 && tools != nil {
		row.Tools, row.NewTools, err = tools.Ref(m.Tools)
		if err != nil {
			return row, spare, err
		}
		m.Tools = nil
		action = m
	}
	if b, err = core.AppendAction(b, action); err != nil {
		return row, spare, err
	}
	endAction := len(b)
	if cp.Result != nil {
		if b, err = core.AppendResult(b, cp.Result); err != nil {
			return row, spare, err
		}
	}
	endResult := len(b)
	st := cp.Action.Next()
	if b, err = EncodeHead(b, st); err != nil {
		return row, spare, fmt.Errorf("encode state: %w", err)
	}
	endHead := len(b)
	msgs := st.Messages
	if len(msgs) < t.MsgCount {
		return row, spare, fmt.Errorf("%w: the state has %d messages, the log already %d", store.ErrNotAppend, len(msgs), t.MsgCount)
	}
	if t.MsgCount > 0 {
		// The last message the log holds, encoded past the head to be
		// compared, then dropped.
		b = core.AppendMessage(b, msgs[t.MsgCount-1])
		if MessageSum(b[endHead:]) != t.MsgSum {
			return row, spare, fmt.Errorf("%w: the state's message %d differs from the stored one", store.ErrNotAppend, t.MsgCount-1)
		}
		b = b[:endHead]
	}
	row.MsgCount, row.MsgSum = len(msgs), t.MsgSum
	endMsgs := endHead
	if added := msgs[t.MsgCount:]; len(added) > 0 {
		b, row.MsgSum = EncodeMessages(b, added)
		endMsgs = len(b)
		if err := CheckMessages(b[endHead:endMsgs], len(added)); err != nil {
			return row, spare, err
		}
		row.Msgs = b[endHead:endMsgs]
	}
	b = append(b, row.Tools...)
	// The parts are sliced only now, the buffer may have moved as it grew;
	// seal appends past them.
	row.Action, row.Head = b[:endAction:endAction], b[endResult:endHead:endHead]
	if cp.Result != nil {
		row.Result = b[endAction:endResult:endResult]
	}
	if row.Msgs != nil {
		row.Msgs = b[endHead:endMsgs:endMsgs]
	}
	b, spare = row.seal(b, 0, spare)
	return row, spare, nil
}

// Initial builds the row of step 0: a run's initial state, created at the
// given time. Its first message, the agent's instructions, is stored by
// reference through blobs (nil: inline; see Blobs).
func Initial(st core.State, created int64, blobs *Blobs) (Row, error) {
	head, err := EncodeHead(nil, st)
	if err != nil {
		return Row{}, err
	}
	var msgs, first []byte
	var sum int64
	if len(st.Messages) > 0 {
		// The first message apart, as it may be stored by reference.
		first = core.AppendMessage(nil, st.Messages[0])
		sum = MessageSum(first)
		if len(st.Messages) > 1 {
			msgs, sum = EncodeMessages(first, st.Messages[1:])
		} else {
			msgs = first
		}
		first = msgs[:len(first):len(first)]
	}
	if err := CheckMessages(msgs, len(st.Messages)); err != nil {
		return Row{}, err
	}
	r := Row{Seq: 0, Created: created, MsgCount: len(st.Messages), MsgSum: sum, Head: head}
	if ref, digest, fresh := blobs.shareFirst(st.Messages, first); ref != nil {
		msgs = append(ref, msgs[len(first):]...)
		r.Blob, r.NewBlob = digest, fresh
	}
	if len(st.Messages) > 0 {
		r.Msgs = msgs
	}
	r.Seal()
	return r, nil
}
