//go:build !race

package server

// raceSlack widens the allocation bounds of the memory tests under the
// race detector only.
const raceSlack = 1.0
