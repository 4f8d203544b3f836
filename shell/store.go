package shell

import "github.com/stepwise-agent/stepwise/store"

// Store is what the runner needs from persistence: store.Store, the
// contract store/sqlite and store/postgres implement. Every write that
// belongs to driving a run takes the run's lease and is refused with
// store.ErrLeaseLost, writing nothing, once another driver took the run
// over (see store.Lease).
type Store = store.Store
