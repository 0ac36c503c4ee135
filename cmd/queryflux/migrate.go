package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/queryflux/queryflux/migrations"
	"github.com/spf13/cobra"
)

func newMigrateCommand() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the control plane's database migrations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if databaseURL == "" {
				databaseURL = os.Getenv("QUERYFLUX_DATABASE_URL")
			}
			if databaseURL == "" {
				return fmt.Errorf("--database-url (or QUERYFLUX_DATABASE_URL) is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := migrations.Up(ctx, databaseURL); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "migrations applied")
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "postgres:// URL of the control plane's database (or QUERYFLUX_DATABASE_URL)")
	return cmd
}
