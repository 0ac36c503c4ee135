package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// EngineOpenCheck opens a configuration's engines and reports, as Errors, every cluster that
// cannot be opened (the binary's engine adapters live outside this package).
type EngineOpenCheck func(ctx context.Context, cfg *Config) error

// NewConfigCommand returns the `config` command group of the queryflux CLI, with
// `config check [--dial] FILE`: it loads FILE strictly, compiles it (validation plus every
// registered compiler linked into the binary), with --dial opens every engine through dial
// (the check a control plane runs before it accepts an edit), prints every error with its
// path and line, and exits non-zero if there is any. The command reads the file named and the
// environment variables and files its secret references name; --dial also connects to the
// engines. A nil dial leaves the flag out.
//
//determinism:production the CLI's `config check`
func NewConfigCommand(dial EngineOpenCheck) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with configuration files",
	}
	cmd.AddCommand(newCheckCommand(dial))
	return cmd
}

//determinism:production the CLI's `config check`
func newCheckCommand(dial EngineOpenCheck) *cobra.Command {
	var dialing bool
	cmd := &cobra.Command{
		Use:          "check FILE",
		Short:        "Check a configuration file and print every error with its path",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var open EngineOpenCheck
			if dialing {
				open = dial
			}
			errs := CheckWith(cmd.Context(), args[0], open)
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
	if dial != nil {
		cmd.Flags().BoolVar(&dialing, "dial", false, "also open every engine (connect, log in, ping) as a control plane does before it accepts an edit")
	}
	return cmd
}

// Check loads the file at path, resolves its secret references (from this process's environment
// and files, as the node loading it would) and compiles it; it returns every error found (nil
// when it is valid).
//
//determinism:production the CLI's check of a file
func Check(path string) []FieldError {
	return CheckWith(context.Background(), path, nil)
}

// CheckWith is Check followed, when the file compiles and open is not nil, by open's check of
// its engines.
//
//determinism:production the CLI's check of a file
func CheckWith(ctx context.Context, path string, open EngineOpenCheck) []FieldError {
	cfg, err := Load(path)
	if err == nil {
		_, err = ResolveSecrets(cfg, OSSecrets, path)
	}
	if err == nil {
		err = Compile(cfg)
	}
	if err == nil && open != nil {
		if ctx == nil {
			ctx = context.Background()
		}
		err = open(ctx, cfg)
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
