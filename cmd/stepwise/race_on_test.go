//go:build race

package main

// raceSlack widens the allocation bounds of the memory tests under the
// race detector, whose bookkeeping allocates beside the code (about 10-20%
// more, measured).
const raceSlack = 1.5
