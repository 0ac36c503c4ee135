package main

import "github.com/queryflux/queryflux/internal/history/historycli"

// queryflux history: the fleet's query history from the control plane's GET /admin/queries.
func init() { rootCmd.AddCommand(historycli.NewCommand()) }
