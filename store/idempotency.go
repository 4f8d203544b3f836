package store

import (
	"context"
	"time"
)

// Idempotency keeps what a request made with an idempotency key did, so
// that its retry (a client whose connection died before the answer) gets
// the first outcome instead of doing the work again. store/sqlite and
// store/postgres implement it beside Store. A key is claimed before the
// work and settled with its response after; a claim that was never settled
// (the process died in between) carries Ref, what the work was to create
// (a new run's id), so a retry can tell whether it happened. Keys are
// scoped (the route and run they belong to) and kept for IdempotencyTTL.
type Idempotency interface {
	// ClaimKey records key as claimed by a request whose body digests to
	// k.Digest, with k.Ref, and returns it with claimed true; when the key
	// is already recorded (and younger than IdempotencyTTL) it returns the
	// record, claimed false, and changes nothing, except that a claim with
	// the same digest that was never settled and is older than stale (its
	// request died) is taken over: claimed again, now, keeping its Ref,
	// which the returned record carries. Of racing claimers one wins.
	ClaimKey(ctx context.Context, k IdempotencyKey, stale time.Duration) (rec IdempotencyKey, claimed bool, err error)
	// SettleKey stores the response of a claimed key (ErrNotFound when it
	// is not recorded).
	SettleKey(ctx context.Context, scope, key string, status int, body []byte) error
	// DropKey forgets a claim whose request failed in a way its retry must
	// do again (the store was unavailable); nothing when it is not recorded.
	DropKey(ctx context.Context, scope, key string) error
}

// IdempotencyTTL is how long a key is remembered.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyKey is one recorded key.
type IdempotencyKey struct {
	// Scope is what the key belongs to (a route, and a run's id), Key the
	// client's key (at most 255 bytes), Digest a digest of the request's
	// body: a retry with the same key and another body is a client error.
	Scope, Key, Digest string
	// Ref is what the request was to create, known before it did (a new
	// run's id).
	Ref string
	// Status and Body are the response, once settled (Status 0 before).
	Status int
	Body   []byte
	// Created is when the key was claimed, by the store's clock.
	Created time.Time
}
