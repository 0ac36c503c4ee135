package querynode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/queryflux/queryflux/internal/config"
)

// CheckEngines reports, as config.Errors with each cluster's path, every cluster of cfg
// (variants expanded, references resolved from src) whose engine this host could not open:
// an unresolvable reference, or a DuckDB file that is a directory or sits in a directory that
// does not exist. Network endpoints are parsed by config.Compile; they are not dialled here (the
// control plane may not be where the workers are). The control plane runs it before it accepts
// a configuration, so a configuration no node can run is refused with the clusters named and
// never published.
func CheckEngines(_ context.Context, cfg *config.Config, src config.SecretSource) error {
	resolved := config.Clone(cfg)
	if err := config.ResolveSharedSecrets(resolved, src); err != nil {
		return err
	}
	var errs config.Errors
	for _, ec := range resolved.ExpandClusters() {
		if ec.Engine == config.EngineDuckDB {
			if msg := duckDBPathProblem(ec.Endpoint); msg != "" {
				errs = append(errs, config.FieldError{Path: ec.Path + ".endpoint", Message: msg})
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// duckDBPathProblem says why DuckDB could not open a database at path ("" when it could).
func duckDBPathProblem(path string) string {
	if path == "" || path == ":memory:" {
		return ""
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return fmt.Sprintf("DuckDB database %s is a directory, not a file", path)
		}
		return ""
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return fmt.Sprintf("DuckDB database %s cannot be created: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Sprintf("DuckDB database %s cannot be created: directory %s: %v", path, dir, err.(*os.PathError).Err)
	case !st.IsDir():
		return fmt.Sprintf("DuckDB database %s cannot be created: %s is not a directory", path, dir)
	}
	return ""
}
