package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// Acquire takes the run's lease (see store.Runs). A held lease is taken
// over only when this store has watched its heartbeat not move for its
// TTL (see watch), or when req.TakeOver names exactly its holder.
func (s *SQLite) Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Check(); err != nil {
		return store.Lease{}, fmt.Errorf("run %s: acquire lease: %w", runID, err)
	}
	// A new holder reads the run's last step back rather than trusting
	// what this store remembers of it.
	s.cache.ForgetTail(runID)
	var out store.Lease
	err := s.writeLight(ctx, "run "+runID+": acquire lease", func(tx *wtx) error {
		var cur store.Lease
		var expires, beat, ttl int64
		err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_token, lease_expires_ns, lease_beat, lease_ttl_ns FROM runs WHERE id = ?`, runID).
			Scan(&cur.Owner, &cur.Token, &expires, &beat, &ttl)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		cur.RunID, cur.Expires = runID, fromNs(expires)
		// Read after the row: a renewal this read missed committed
		// after it, so the watch never starts before the last renewal.
		now := s.now()
		var v verdict
		if cur.Owner != "" {
			v = s.watch.look(cur, beat, leaseTTL(ttl, req.TTL), now)
		}
		if !req.TakesOver(cur, v.expired) {
			return &store.BusyError{Holder: cur, Recheck: v.recheck, Renewed: v.renewed}
		}
		out = store.Lease{RunID: runID, Owner: req.Owner, Token: cur.Token + 1, Expires: now.Add(req.TTL).UTC()}
		note := ""
		if req.Forced != "" && cur.Owner != "" && !v.expired {
			note = req.TakeOverNote(cur, now)
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_token = ?, lease_expires_ns = ?, lease_beat = lease_beat + 1, lease_ttl_ns = ?,
			takeovers = CASE WHEN ?5 = '' THEN takeovers WHEN takeovers = '' THEN ?5 ELSE takeovers || char(10) || ?5 END WHERE id = ?`,
			out.Owner, out.Token, out.Expires.UnixNano(), int64(req.TTL), note, runID)
		if err != nil {
			return err
		}
		s.rememberTail(ctx, tx, runID)
		return nil
	})
	if err == nil {
		s.watch.forget(runID)
	}
	return out, err
}

// rememberTail reads the run's last step inside tx, the transaction that
// gives the run's lease to a new holder, and remembers it once tx commits:
// the holder's first checkpoint is then the common one (a group-committed
// insert, its row built outside the write lock) rather than a read of the
// tail and a general write. What is remembered is read back, not what this
// store remembered before (which Acquire forgets); from the commit on,
// only the new holder appends, fenced by its token. On an error the tail is
// forgotten, and the first checkpoint reads it itself.
func (s *SQLite) rememberTail(ctx context.Context, tx *wtx, runID string) {
	t, _, _, err := s.lastStep(ctx, tx, runID)
	if err != nil {
		tx.onCommit(func() { s.cache.ForgetTail(runID) })
		return
	}
	tx.onCommit(func() { s.cache.SetTail(runID, t) })
}

// leaseTTL is the TTL a lease's watchers wait out: the holder's, or, for a
// lease written before the holder's was stored, the contender's own.
func leaseTTL(stored int64, own time.Duration) time.Duration {
	if stored > 0 {
		return time.Duration(stored)
	}
	return own
}

// Renew extends a held lease (see store.Runs) and moves its heartbeat.
func (s *SQLite) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("run %s: renew lease: TTL %v", l.RunID, ttl)
	}
	err := s.writeLight(ctx, "run "+l.RunID+": renew lease", func(tx *wtx) error {
		if _, _, err := fence(ctx, tx, l); err != nil {
			return err
		}
		l.Expires = s.now().Add(ttl).UTC()
		_, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires_ns = ?, lease_beat = lease_beat + 1, lease_ttl_ns = ? WHERE id = ?`,
			l.Expires.UnixNano(), int64(ttl), l.RunID)
		return err
	})
	return l, err
}

// Release gives the lease up (see store.Runs).
func (s *SQLite) Release(ctx context.Context, l store.Lease) error {
	return s.writeLight(ctx, "run "+l.RunID+": release lease", func(tx *wtx) error {
		// One statement, conditional on the lease; only when it changes
		// nothing is the run read, to say why.
		if l.Owner == "" {
			return lostOrMissing(ctx, tx, l)
		}
		res, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = '', lease_expires_ns = 0 WHERE id = ? AND lease_owner = ? AND lease_token = ?`,
			l.RunID, l.Owner, l.Token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return lostOrMissing(ctx, tx, l)
	})
}

// fence checks, inside a write transaction, that l is still the run's
// lease, and returns the run's key and status.
func fence(ctx context.Context, tx querier, l store.Lease) (rk int64, status store.Status, err error) {
	var owner, st string
	var token int64
	err = tx.QueryRowContext(ctx, `SELECT rk, status, lease_owner, lease_token FROM runs WHERE id = ?`, l.RunID).
		Scan(&rk, &st, &owner, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return 0, "", err
	}
	if l.Owner == "" || owner != l.Owner || token != l.Token {
		return 0, "", store.LeaseLost(l, owner, token)
	}
	return rk, store.Status(st), nil
}

// lostOrMissing explains why a fenced insert wrote nothing: the run is
// gone, or its lease is not l.
func lostOrMissing(ctx context.Context, q querier, l store.Lease) error {
	var owner string
	var token int64
	err := q.QueryRowContext(ctx, `SELECT lease_owner, lease_token FROM runs WHERE id = ?`, l.RunID).Scan(&owner, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return store.LeaseLost(l, owner, token)
}

func fromNs(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// claimFree selects the runs a worker may claim at ?1 (now) that no lease
// holds: running, or stalled with their retry time come, and a lease free
// (its expiry is 0); the index runs_claimable holds just those.
const claimFree = `status IN ('running', 'stalled') AND lease_expires_ns = 0 AND (status = 'running' OR retry_ns <= ?1)`

// claimHeld selects the runs a worker may claim once their lease lapsed:
// running, or stalled with their retry time come, and held.
const claimHeld = `status IN ('running', 'stalled') AND lease_expires_ns <> 0 AND (status = 'running' OR retry_ns <= ?1)`

// Claim takes the lease of one runnable run (see store.Runs): the oldest
// whose lease is free, or whose heartbeat this store has watched not move
// for its TTL. Each claim looks at every held runnable run, so that the
// watch of a driver that died starts at once.
func (s *SQLite) Claim(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Check(); err != nil {
		return store.Lease{}, fmt.Errorf("claim a run: %w", err)
	}
	lapsed, err := s.lapsed(ctx, req.TTL)
	if err != nil {
		return store.Lease{}, fmt.Errorf("claim a run: %w", err)
	}
	if len(lapsed) == 0 {
		// Most claims of an idle worker find nothing: a read says so
		// without taking the write lock from the runs being checkpointed.
		var any int
		err := s.r.QueryRowContext(ctx, `SELECT 1 FROM runs INDEXED BY runs_claimable WHERE `+claimFree+` LIMIT 1`, s.now().UnixNano()).Scan(&any)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Lease{}, store.ErrNotFound
		}
		if err != nil {
			return store.Lease{}, fmt.Errorf("claim a run: %w", err)
		}
	}
	var out store.Lease
	err = s.writeLight(ctx, "claim a run", func(tx *wtx) error {
		now := s.now()
		ns := now.UnixNano()
		// The oldest free run, and the oldest lapsed one still as this
		// store watched it (same holder, token and heartbeat): the older
		// of the two.
		var id string
		var token, created int64
		err := tx.QueryRowContext(ctx, `SELECT id, lease_token, created_ns FROM runs INDEXED BY runs_claimable WHERE `+claimFree+`
			ORDER BY created_ns, id LIMIT 1`, ns).Scan(&id, &token, &created)
		if errors.Is(err, sql.ErrNoRows) {
			id = ""
		} else if err != nil {
			return err
		}
		for _, c := range lapsed {
			if id != "" && (created < c.created || created == c.created && id < c.id) {
				break
			}
			var owner string
			var tok, beat int64
			err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_token, lease_beat FROM runs WHERE id = ?2 AND `+claimHeld, ns, c.id).
				Scan(&owner, &tok, &beat)
			if err == nil && owner == c.owner && tok == c.token && beat == c.beat {
				id, token = c.id, tok
				break
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if id == "" {
			return store.ErrNotFound
		}
		out = store.Lease{RunID: id, Owner: req.Owner, Token: token + 1, Expires: now.Add(req.TTL).UTC()}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_token = ?, lease_expires_ns = ?, lease_beat = lease_beat + 1, lease_ttl_ns = ? WHERE id = ?`,
			out.Owner, out.Token, out.Expires.UnixNano(), int64(req.TTL), id)
		if err != nil {
			return err
		}
		s.rememberTail(ctx, tx, id)
		return nil
	})
	if err == nil {
		s.watch.forget(out.RunID)
	}
	return out, err
}

// lapsed looks at every held runnable run (updating the watch) and returns
// those whose lease this store has watched lapse, oldest first.
func (s *SQLite) lapsed(ctx context.Context, own time.Duration) ([]heldRun, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, created_ns, lease_owner, lease_token, lease_beat, lease_ttl_ns FROM runs INDEXED BY runs_claimable
		WHERE `+claimHeld+` ORDER BY created_ns, id`, s.now().UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var held []heldRun
	var ttls []int64
	for rows.Next() {
		var c heldRun
		var ttl int64
		if err := rows.Scan(&c.id, &c.created, &c.owner, &c.token, &c.beat, &ttl); err != nil {
			return nil, err
		}
		held, ttls = append(held, c), append(ttls, ttl)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	now := s.now() // after the read (see Acquire)
	var out []heldRun
	for i, c := range held {
		l := store.Lease{RunID: c.id, Owner: c.owner, Token: c.token}
		if s.watch.look(l, c.beat, leaseTTL(ttls[i], own), now).expired {
			out = append(out, c)
		}
	}
	return out, nil
}

// heldRun is a held runnable run as Claim saw it.
type heldRun struct {
	id          string
	created     int64
	owner       string
	token, beat int64
}
