//go:build race

package scenarios_test

// raceDetector: built with -race, whose instrumented frames are larger (stack sizes differ).
const raceDetector = true
