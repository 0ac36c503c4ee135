package pgengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Engine sessions are tagged with the capacity lease that admitted their query: the session's
// application_name is the lease's tag (query.EngineTag of the statement's context), set when a
// connection is taken for a statement whose tag differs from the connection's (one round trip,
// only then; on the relay, the same round trip as the connection's reset and setup, wire.go's
// serve). The control plane finds the backends of a lease it reclaims in pg_stat_activity
// by that name and terminates them (internal/capacity/enginefence). A statement without a tag
// puts the connection's own application_name back, so no untagged work runs under an old tag.
//
// Backstop: client_connection_check_interval (PostgreSQL 14 and later) makes a backend notice,
// while its query runs, that the proxy's socket closed (a worker killed with -9) and end the
// query without waiting for the control plane.

// ClientCheckInterval is the engine sessions' client_connection_check_interval (the simulator's
// PostgreSQL engine model looks at a dead client's socket as often).
const ClientCheckInterval = time.Second

// tagKey is where a connection remembers its current tag (pgconn's CustomData).
const tagKey = "queryflux.tag"

// tagSessions makes the pool tag its connections and set the backstop (see above), unless the
// cluster's options set client_connection_check_interval themselves.
func tagSessions(cfg *pgxpool.Config) {
	base := cfg.ConnConfig.RuntimeParams["application_name"]
	if _, set := cfg.ConnConfig.RuntimeParams["client_connection_check_interval"]; !set {
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.PgConn().Exec(ctx, backstopSQL).ReadAll()
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == codeUndefinedObject {
				return nil // before PostgreSQL 14
			}
			return err
		}
	}
	cfg.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if err := resetForOwner(ctx, conn, cfg.AfterConnect); err != nil {
			return false, nil // its state unknown: another connection, a new one if need be
		}
		return true, retag(ctx, conn.PgConn(), base)
	}
}

const (
	codeUndefinedObject = sqlstate.UndefinedObject
)

var backstopSQL = fmt.Sprintf("SET client_connection_check_interval = '%dms'", ClientCheckInterval.Milliseconds())

// retag gives pc the tag of ctx (base without one) and the search_path of ctx
// (searchpath.go), in one round trip, unless it has them already.
func retag(ctx context.Context, pc *pgconn.PgConn, base string) error {
	want := query.EngineTag(ctx)
	if want == "" {
		want = base
	}
	path := searchPathOf(ctx)
	data := pc.CustomData()
	cur, _ := data[tagKey].(string)
	curPath, _ := data[searchPathKey].(string)
	if cur == want && curPath == path {
		return nil
	}
	sql := "SELECT "
	if cur != want {
		sql += setTagItem(want)
	}
	if curPath != path {
		if cur != want {
			sql += ", "
		}
		sql += setSearchPathSQL(path)
	}
	if _, err := pc.Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("pgengine: tagging the session: %w", err)
	}
	data[tagKey], data[searchPathKey] = want, path
	return nil
}

// setTagSQL sets application_name to tag, quoted as a literal.
func setTagSQL(tag string) string { return "SELECT " + setTagItem(tag) }

func setTagItem(tag string) string {
	return "set_config('application_name', '" + strings.ReplaceAll(tag, "'", "''") + "', false)"
}

// rawTag is a relay connection's tagging state.
type rawTag struct {
	tag    string
	tagged bool // tag is set, and so is the backstop
}

// wantTag is the tag a connection must carry for a statement under ctx: its lease's (o.Tag,
// else ctx's unless o.TagGiven), else the pool's application_name.
func (p *rawPool) wantTag(ctx context.Context, o engine.PGWireOptions) string {
	if o.Tag != "" {
		return o.Tag
	}
	if o.TagGiven {
		return p.cfg.RuntimeParams["application_name"]
	}
	if want := query.EngineTag(ctx); want != "" {
		return want
	}
	return p.cfg.RuntimeParams["application_name"]
}

// ConnConfig is the connection configuration of spec (the one its pool uses), for a client
// of the cluster other than the pool: the control plane's engine fence.
func ConnConfig(spec engine.Spec) (*pgx.ConnConfig, error) {
	cfg, err := poolConfig(spec)
	if err != nil {
		return nil, err
	}
	return cfg.ConnConfig, nil
}
