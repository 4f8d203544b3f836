//go:build !race

package main

// raceSlack widens the allocation bounds of the memory tests under the
// race detector only.
const raceSlack = 1.0
