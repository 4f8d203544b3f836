package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// Idempotency-Key: a client that sends one with a POST that creates or
// answers something gets, on a retry with the same key, the first
// request's outcome instead of a second run or a second answer (a client
// whose connection died before the answer cannot otherwise know what
// happened). Keys live in the store (store.Idempotency), so every server
// on one database honours them, for store.IdempotencyTTL.

// claimGrace is how long a claimed key whose request has not answered
// yet is taken to be in progress (409 in_progress); after it the request
// is taken to have died with its server, and a retry does it (under the
// run id the first drew, so that a run it did create is found).
const claimGrace = 30 * time.Second

// maxKeyLen bounds an Idempotency-Key.
const maxKeyLen = 255

type runIDKey struct{}

// presetRunID is the id a run created by this request must take: drawn
// before the work, so that a retry after a crash can tell whether the run
// exists.
func presetRunID(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}

// idempotent wraps a POST route: with an Idempotency-Key header the first
// outcome is kept and a retry gets it back (Idempotent-Replayed: true); a
// retry with another body is 422 idempotency_mismatch; one while the first
// is under way is 409 in_progress. creates says the route creates a run,
// whose id is then drawn before the work.
func idempotent(creates bool, next func(*Server, http.ResponseWriter, *http.Request)) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			next(s, w, r)
			return
		}
		if err := checkKey(key); err != nil {
			writeError(w, err)
			return
		}
		idem, ok := s.cfg.Store.(store.Idempotency)
		if !ok {
			writeError(w, errorf(http.StatusNotImplemented, codeBadRequest, "this server's store keeps no idempotency keys"))
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, readError(err))
			return
		}
		sum := sha256.Sum256(body)
		k := store.IdempotencyKey{Scope: r.Method + " " + r.URL.Path, Key: key, Digest: hex.EncodeToString(sum[:])}
		if creates {
			k.Ref = shell.NewRunID()
		}
		rec, claimed, err := idem.ClaimKey(r.Context(), k, claimGrace)
		if err != nil {
			writeError(w, err)
			return
		}
		if !claimed {
			switch {
			case rec.Digest != k.Digest:
				writeError(w, errorf(http.StatusUnprocessableEntity, codeIdempotencyMismatch,
					"the Idempotency-Key %q was used with another request body", key))
				return
			case rec.Status != 0:
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.Header().Set("Cache-Control", "no-store")
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(rec.Status)
				_, _ = w.Write(rec.Body)
				return
			case creates && rec.Ref != "" && s.runExists(w, r, rec.Ref):
				// The first request created the run and died before it
				// answered: the run is the outcome.
				rw := &recorder{ResponseWriter: w}
				s.respondRun(rw, r, rec.Ref, http.StatusCreated, 0)
				if err := idem.SettleKey(context.WithoutCancel(r.Context()), k.Scope, k.Key, rw.status, rw.body.Bytes()); err != nil {
					s.logf("idempotency key %q: keep the outcome: %v", key, err)
				}
				return
			default:
				w.Header().Set("Retry-After", "1")
				writeError(w, errorf(http.StatusConflict, codeInProgress,
					"a request with the Idempotency-Key %q is under way; retry to get its outcome", key))
				return
			}
		}
		// Claimed, or taken over from a request that died (its ref kept):
		// this request does the work.
		k.Ref = rec.Ref
		ctx := r.Context()
		if k.Ref != "" {
			ctx = context.WithValue(ctx, runIDKey{}, k.Ref)
		}
		r = r.WithContext(ctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rw := &recorder{ResponseWriter: w}
		next(s, rw, r)
		done := context.WithoutCancel(ctx)
		if rw.status >= 500 || rw.status == 0 {
			_ = idem.DropKey(done, k.Scope, k.Key) // a retry must do it again
			return
		}
		if err := idem.SettleKey(done, k.Scope, k.Key, rw.status, rw.body.Bytes()); err != nil {
			s.logf("idempotency key %q: keep the outcome: %v", key, err)
		}
	}
}

// checkKey refuses a key that is empty, too long, or not printable ASCII.
func checkKey(key string) error {
	if len(key) > maxKeyLen {
		return errorf(http.StatusBadRequest, codeBadRequest, "the Idempotency-Key is longer than %d bytes", maxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return errorf(http.StatusBadRequest, codeBadRequest, "the Idempotency-Key must be printable ASCII without spaces")
		}
	}
	return nil
}

// recorder passes a response through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// runExists reports whether run id is stored; false when it is not, or
// when the store could not say (then a retry is told the request is in
// progress, and asks again).
func (s *Server) runExists(w http.ResponseWriter, r *http.Request, id string) bool {
	_, err := s.cfg.Store.Run(r.Context(), id)
	return err == nil
}

// runnerFor is a runner like the server's whose next run takes the id id
// (an idempotent request's run, whose id was drawn before the work).
func (s *Server) runnerFor(id string) *shell.Runner {
	o := s.runnerOpts
	o.NewID = func() string { return id }
	return shell.NewRunner(s.cfg.Store, &o)
}
