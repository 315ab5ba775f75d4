//go:build !race

package tracertest

// RaceSlowdown is 1 without the race detector (race_on.go).
const RaceSlowdown = 1
