//go:build !race

package tracer

// raceSlowdown: see race_on_test.go.
const raceSlowdown = 1
