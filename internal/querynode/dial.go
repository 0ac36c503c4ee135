package querynode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// Dial check bounds: one engine gets DialTimeout to connect, log in and answer a ping; at most
// dialParallel engines are tried at once, so a configuration of many clusters is checked in
// about ceil(n/dialParallel) * DialTimeout at worst.
const (
	DialTimeout  = 5 * time.Second
	dialParallel = 16
)

// DialEngines opens, with the openers of kinds, every network engine of cfg (variants expanded, references resolved from
// src: PostgreSQL, MySQL, StarRocks and Trino clusters), logs in and pings it, and reports, as
// config.Errors with each cluster's path, every one that could not be reached or refused the
// login. DuckDB and simulated clusters are not opened (CheckEngines checks DuckDB's file):
// opening a DuckDB file would create and lock it. Clusters reached the same way are dialled
// once; dials run concurrently, each bounded by timeout (DialTimeout when 0). Messages name
// the cluster and its endpoint (without credentials), never a password or token.
func DialEngines(ctx context.Context, kinds engine.Openers, cfg *config.Config, src config.SecretSource, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DialTimeout
	}
	resolved := config.Clone(cfg)
	if err := config.ResolveSharedSecrets(resolved, src); err != nil {
		return err
	}
	var targets []config.ExpandedCluster
	first := map[string]int{} // spec key -> index in targets
	var sameAs []int          // for each expanded cluster, the target it shares
	expanded := resolved.ExpandClusters()
	for _, ec := range expanded {
		if !dialled(ec.Engine) {
			sameAs = append(sameAs, -1)
			continue
		}
		k := dialKey(ec.Cluster)
		i, seen := first[k]
		if !seen {
			i = len(targets)
			first[k] = i
			targets = append(targets, ec)
		}
		sameAs = append(sameAs, i)
	}
	problems := make([]string, len(targets))
	sem := make(chan struct{}, dialParallel)
	var wg sync.WaitGroup
	for i, ec := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			problems[i] = dialOne(ctx, kinds, ec.Cluster, timeout)
		}()
	}
	wg.Wait()
	var errs config.Errors
	for j, ec := range expanded {
		if i := sameAs[j]; i >= 0 && problems[i] != "" {
			errs = append(errs, config.FieldError{Path: ec.Path,
				Message: fmt.Sprintf("cluster %q: cannot open its %s engine at %s: %s", ec.Name, ec.Engine, config.RedactURL(ec.Endpoint), problems[i])})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// dialled says whether DialEngines opens clusters of engine kind.
func dialled(kind string) bool {
	switch kind {
	case config.EnginePostgres, config.EngineMySQL, config.EngineStarRocks, config.EngineTrino:
		return true
	}
	return false
}

// dialKey identifies how c's engine is reached: clusters (or variants) with the same key open
// the same connections.
func dialKey(c config.Cluster) string {
	spec := EngineSpec(c)
	var b strings.Builder
	for _, s := range []string{spec.Kind, spec.Endpoint, spec.Database, spec.User, spec.Password, c.Credentials.Token.Reveal()} {
		fmt.Fprintf(&b, "%d:%s;", len(s), s)
	}
	for _, k := range sortedOptionKeys(spec.Options) {
		fmt.Fprintf(&b, "%d:%s=%d:%s;", len(k), k, len(spec.Options[k]), spec.Options[k])
	}
	return b.String()
}

func sortedOptionKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// dialOne opens c's engine with one connection, pings it and closes it; it returns "" when that
// worked, else why not (with c's secrets scrubbed).
func dialOne(ctx context.Context, kinds engine.Openers, c config.Cluster, timeout time.Duration) string {
	c.MaxRunningQueries = 1
	e, err := openEngine(kinds, c)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err = e.Ping(pctx)
		// The engine's own socket deadline is pctx's, and may fire a moment before pctx
		// reports done, so the clock decides whether the answer timed out.
		deadline, _ := pctx.Deadline()
		if err != nil && !time.Now().Before(deadline) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		cancel()
		_ = e.Close()
	}
	if err == nil {
		return ""
	}
	return scrubSecrets(dialReason(err), c)
}

// dialReason is the part of a failed open that says what went wrong: the server's refusal
// (login, database), or the network's (refused, timed out, no such host).
func dialReason(err error) string {
	var hidden *query.Hidden
	if errors.As(err, &hidden) {
		err = hidden.Detail
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("the server refused: %s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		return fmt.Sprintf("the server refused: %s (MySQL error %d)", me.Message, me.Code)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "cannot resolve host " + dns.Name
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		if qe.Code != query.CodeEngine {
			return "the server refused: " + qe.Message
		}
		return qe.Message
	}
	return err.Error()
}

// scrubSecrets hides in msg every credential c carries (Cluster.SecretValues).
func scrubSecrets(msg string, c config.Cluster) string {
	return config.ScrubSecrets(msg, c.SecretValues())
}
