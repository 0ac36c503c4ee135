package plan

import (
	_ "embed"

	"github.com/queryflux/queryflux/scenarios"
)

// calibrationYAML is the control plane's service times measured on a local PostgreSQL by
// BenchmarkCalibration (calibrate_test.go).
//
//go:embed calibration.yaml
var calibrationYAML []byte

// BuiltinCalibration is the calibration a plan uses unless told otherwise: without one the
// control plane would answer in no time and a large fleet would look free.
func BuiltinCalibration() *scenarios.Calibration {
	c, err := scenarios.ParseCalibration("plan/calibration.yaml", calibrationYAML)
	if err != nil {
		panic(err) // the embedded file is tested
	}
	return c
}
