// Package runfile reads recorded runs straight from their portable files
// (the files `stepwise export` writes; the format is described in
// store/sqlite's package documentation), with no database: a replay or a
// golden-run test reads a directory of recordings as they are.
//
// Read checks a file as Import does (every step's checksum, that the steps
// and the message log are contiguous, that every state, message, action and
// result decodes) and decodes all of it. A File answers the read methods of
// store.Runs that a replay needs (Run, AgentChanges, Steps, LoadStep,
// LoadLatest) for its one run. It does not keep the intents a file carries.
package runfile
