package config

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// NewConfigCommand returns the `config` command group of the queryflux CLI, with
// `config check FILE`: it loads FILE strictly, compiles it (validation plus every registered
// compiler linked into the binary), prints every error with its path and line, and exits
// non-zero if there is any. The command reads the file named and the environment variables and
// files its secret references name.
func NewConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with configuration files",
	}
	cmd.AddCommand(newCheckCommand())
	return cmd
}

func newCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:          "check FILE",
		Short:        "Check a configuration file and print every error with its path",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			errs := Check(args[0])
			if len(errs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", args[0])
				return nil
			}
			for _, e := range errs {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", args[0], e.Error())
			}
			return fmt.Errorf("%s: %d error(s)", args[0], len(errs))
		},
	}
}

// Check loads the file at path, resolves its secret references (from this process's environment
// and files, as the node loading it would) and compiles it; it returns every error found (nil
// when it is valid).
func Check(path string) []FieldError {
	cfg, err := Load(path)
	if err == nil {
		err = ResolveSecrets(cfg, OSSecrets)
	}
	if err == nil {
		err = Compile(cfg)
	}
	if err == nil {
		return nil
	}
	var errs Errors
	if errors.As(err, &errs) {
		return errs
	}
	return []FieldError{{Message: err.Error()}}
}
