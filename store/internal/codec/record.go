package codec

import (
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Resolver returns the tool list stored under a digest.
type Resolver func(digest []byte) ([]core.Tool, error)

// Record decodes the opened row into a StepRecord whose state holds the
// first MsgCount messages of log, re-attaching the action's tool list
// through resolve.
func (r *Row) Record(runID string, log []core.Message, resolve Resolver) (store.StepRecord, error) {
	st, err := core.DecodeState(r.Head)
	if err != nil {
		return store.StepRecord{}, fmt.Errorf("run %s step %d: %w: %w", runID, r.Seq, store.ErrCorrupt, err)
	}
	if st.Messages != nil {
		return store.StepRecord{}, fmt.Errorf("%w: run %s step %d: the state head holds messages", store.ErrCorrupt, runID, r.Seq)
	}
	if r.MsgCount > len(log) {
		return store.StepRecord{}, fmt.Errorf("%w: run %s step %d: holds %d messages, the log has %d", store.ErrCorrupt, runID, r.Seq, r.MsgCount, len(log))
	}
	if r.MsgCount > 0 {
		// Capped, so appending to one state's messages never writes into
		// the log other states share.
		st.Messages = log[:r.MsgCount:r.MsgCount]
	}
	rec := store.StepRecord{Seq: r.Seq, State: st, Created: FromNs(r.Created)}
	if r.Action != nil {
		if rec.Action, err = core.DecodeAction(r.Action, st); err != nil {
			return store.StepRecord{}, fmt.Errorf("run %s step %d: %w: %w", runID, r.Seq, store.ErrCorrupt, err)
		}
		if r.Tools != nil {
			m, ok := rec.Action.(core.RequestModelCall)
			if !ok || len(m.Tools) > 0 {
				return store.StepRecord{}, fmt.Errorf("%w: run %s step %d: a tool list reference on a %s action", store.ErrCorrupt, runID, r.Seq, core.ActionKind(rec.Action))
			}
			if m.Tools, err = resolve(r.Tools); err != nil {
				return store.StepRecord{}, fmt.Errorf("run %s step %d: %w", runID, r.Seq, err)
			}
			rec.Action = m
		}
	}
	if r.Result != nil {
		if rec.Result, err = core.DecodeResult(r.Result); err != nil {
			return store.StepRecord{}, fmt.Errorf("run %s step %d: %w: %w", runID, r.Seq, store.ErrCorrupt, err)
		}
	}
	return rec, nil
}

// AppendTo decodes the messages the opened row appended onto log, checking
// that they bring it to the row's count; a first message stored once is
// read through load. raw, when non-nil, receives each message's encoding.
func (r *Row) AppendTo(runID string, log []core.Message, raw *[][]byte, load Load) ([]core.Message, error) {
	return r.appendAfter(runID, log, 0, raw, load)
}

// appendAfter is AppendTo for a log that holds the messages from message
// skip on (those before are elsewhere).
func (r *Row) appendAfter(runID string, log []core.Message, skip int, raw *[][]byte, load Load) ([]core.Message, error) {
	before := len(log)
	var ends []int
	var endsp *[]int
	if raw != nil {
		endsp = &ends
	}
	msgs := r.Msgs
	if skip+before == 0 {
		var err error
		if msgs, err = inline(msgs, load); err != nil {
			return log, fmt.Errorf("run %s step %d: %w", runID, r.Seq, err)
		}
	}
	log, err := DecodeMessages(msgs, -1, false, log, endsp)
	if err != nil {
		return log, fmt.Errorf("run %s step %d: its messages: %w: %w", runID, r.Seq, store.ErrCorrupt, err)
	}
	if skip+len(log) != r.MsgCount {
		return log, fmt.Errorf("%w: run %s step %d: holds %d messages, but %d before and %d appended", store.ErrCorrupt, runID, r.Seq, r.MsgCount, skip+before, len(log)-before)
	}
	start := 0
	for _, end := range ends {
		*raw = append(*raw, msgs[start:end:end])
		start = end
	}
	return log, nil
}

// OpenVerified verifies the row's checksum as a row of run rk, then opens
// its body.
func (r *Row) OpenVerified(runID string, rk int64) error {
	if err := r.Verify(runID, rk); err != nil {
		return err
	}
	if err := r.Open(); err != nil {
		return fmt.Errorf("%w: run %s step %d: %v", store.ErrCorrupt, runID, r.Seq, err)
	}
	return nil
}

// FromNs is a time stored in nanoseconds, UTC.
func FromNs(ns int64) time.Time { return time.Unix(0, ns).UTC() }
