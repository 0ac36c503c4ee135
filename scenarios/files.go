package scenarios

import "embed"

// Files are the scenario files of this directory, built into the binary (Studio offers those
// with a workload for planning).
//
//go:embed *.yaml
var Files embed.FS
