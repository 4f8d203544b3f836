package store

import (
	"fmt"
	"strings"
)

// Durability says what a committed write survives.
type Durability string

// Durability settings.
const (
	// DurabilityCritical, the default: the commits that carry a promise
	// survive a power loss (a run's creation, the intent written before a
	// non-idempotent call and its outcome, a pause, a stall, a run's end, a
	// cancel request, a posted message, an import), and the others are not
	// synced on their own: a running run's step, whose loss only repeats
	// an idempotent step (or a message's delivery: the message stays in
	// the inbox until the step that folds it in); a lease, whose holders
	// on this machine a power loss kills; a cache entry (each synced
	// commit makes everything before it durable too). On SQLite, FULL for
	// the first kind and NORMAL for the second; PostgreSQL is full.
	DurabilityCritical Durability = "critical"
	// DurabilityFull: a committed write survives a power loss (SQLite's
	// synchronous=FULL: the WAL is synced at every commit; PostgreSQL's
	// synchronous_commit=on).
	DurabilityFull Durability = "full"
	// DurabilityNormal: a committed write survives a crash of the process
	// but may roll back after a power loss or an operating-system crash
	// (SQLite's synchronous=NORMAL; PostgreSQL's synchronous_commit=off).
	// Faster per step; a run may then repeat a non-idempotent call.
	DurabilityNormal Durability = "normal"
)

// ParseDurability reads "critical", "full" or "normal" (any case); "" is
// critical.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(strings.ToLower(strings.TrimSpace(s))); d {
	case "":
		return DurabilityCritical, nil
	case DurabilityCritical, DurabilityFull, DurabilityNormal:
		return d, nil
	}
	return "", fmt.Errorf("durability %q: want full, normal or critical (the default)", s)
}
