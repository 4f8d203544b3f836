//go:build !race

package memtest

const raceSlack = 1.0
