// Command queryflux is the QueryFlux daemon and its admin CLI: serve (standalone, control plane
// or worker, each built by node/assembly), dev, migrate, config, workers, leases, history and
// passwd; newRootCommand lists them all.
//
// determinism: outside the simulator (the daemon's wiring: listeners, signals, real clock)
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/queryflux/queryflux/internal/history/historycli"
	"github.com/spf13/cobra"
)

// version is the build's version: -ldflags "-X main.version=..." when set, else (from main) what
// the Go toolchain recorded: the module version, or the VCS revision and time of the checkout.
var version string

// buildVersion returns stamped when set, else the version from the binary's build info.
func buildVersion(stamped string) string {
	if stamped != "" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return fmt.Sprintf("devel-%.12s%s (%s)", rev, modified, at)
}

// newRootCommand is the queryflux command with every subcommand.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "queryflux",
		Short:         "QueryFlux: a fleet of multi-engine SQL query proxies",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(newServeCommand(), newDevCommand(), newMigrateCommand(), newConfigCommand(),
		newWorkersCommand(), newLeasesCommand(), historycli.NewCommand(), newPasswdCommand())
	return root
}

func main() {
	version = buildVersion(version)
	startProfiling()
	root := newRootCommand()
	root.Version = version
	if err := root.Execute(); err != nil {
		// Through the log scrubber: an error can quote a secret of the configuration it loaded.
		fmt.Fprintln(logScrub.to(os.Stderr), "queryflux:", err)
		os.Exit(1)
	}
}
