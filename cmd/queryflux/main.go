// Command queryflux is the QueryFlux daemon and its admin CLI: serve (standalone, control plane
// or worker), migrate, workers list|show, and the commands other files of this package add to
// rootCmd from their init functions (config check, history, ...).
//
// determinism: outside the simulator (the daemon's wiring: listeners, signals, real clock)
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is the build's version; set with -ldflags "-X main.version=...".
var version = "dev"

// rootCmd is the queryflux command. Other files of this package add their subcommands to it
// from init: rootCmd.AddCommand(...).
var rootCmd = &cobra.Command{
	Use:           "queryflux",
	Short:         "QueryFlux: a fleet of multi-engine SQL query proxies",
	SilenceUsage:  true,
	SilenceErrors: true,
	Version:       version,
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "queryflux:", err)
		os.Exit(1)
	}
}
