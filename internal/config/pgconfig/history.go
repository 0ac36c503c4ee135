package pgconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config"
)

// historyLimitMax bounds one History answer.
const historyLimitMax = 1000

// History returns the newest limit stored revisions, newest first.
func (s *Source) History(ctx context.Context, limit int) ([]config.StoredRevision, error) {
	if limit <= 0 || limit > historyLimitMax {
		limit = historyLimitMax
	}
	rows, err := s.pool.Query(ctx, `SELECT id, revision, note, clusters, groups, users, created_at
		FROM config_revisions ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: history: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[config.StoredRevision])
	if err != nil {
		return nil, fmt.Errorf("pgconfig: history: %w", err)
	}
	return out, nil
}

// Stored returns the configuration stored as ref: a row id ("12") or a snapshot revision (its
// newest row), secrets opened.
func (s *Source) Stored(ctx context.Context, ref string) (*config.Config, config.StoredRevision, error) {
	var r config.StoredRevision
	var raw []byte
	query := `SELECT id, revision, note, clusters, groups, users, created_at, config FROM config_revisions WHERE revision = $1 ORDER BY id DESC LIMIT 1`
	var arg any = ref
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		query = `SELECT id, revision, note, clusters, groups, users, created_at, config FROM config_revisions WHERE id = $1`
		arg = id
	}
	err := s.pool.QueryRow(ctx, query, arg).Scan(&r.ID, &r.Revision, &r.Note, &r.Clusters, &r.Groups, &r.Users, &r.CreatedAt, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, r, fmt.Errorf("%w %q", config.ErrNoRevision, ref)
	}
	if err != nil {
		return nil, r, fmt.Errorf("pgconfig: revision %q: %w", ref, err)
	}
	var st stored
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, r, fmt.Errorf("pgconfig: revision %d: %w", r.ID, err)
	}
	cfg, err := st.config(s.opts.Key)
	if err != nil {
		return nil, r, err
	}
	config.ApplyDefaults(cfg)
	return cfg, r, nil
}

// UpdateNoted is Update with a note recorded in config_revisions ("rollback to 12", "import").
func (s *Source) UpdateNoted(ctx context.Context, note string, edit func(*config.Config) error) error {
	return s.update(ctx, note, edit)
}

// rejectionsKept is how many refused edits the table keeps; older ones are deleted as new
// ones arrive, so a client hammering the API with bad documents cannot grow it.
const rejectionsKept = 1000

// Reject records a refused edit: source names the request, reason what was wrong.
func (s *Source) Reject(ctx context.Context, source, reason string) error {
	_, err := s.pool.Exec(ctx, `WITH added AS (
			INSERT INTO config_rejections (source, reason) VALUES ($1, $2) RETURNING id)
		DELETE FROM config_rejections WHERE id <= (SELECT id FROM added) - $3`, source, reason, rejectionsKept)
	if err != nil {
		return fmt.Errorf("pgconfig: recording a rejected edit: %w", err)
	}
	return nil
}

// Rejections returns the newest limit refused edits, newest first.
func (s *Source) Rejections(ctx context.Context, limit int) ([]config.Rejection, error) {
	if limit <= 0 || limit > rejectionsKept {
		limit = rejectionsKept
	}
	rows, err := s.pool.Query(ctx, `SELECT id, source, reason, created_at
		FROM config_rejections ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: rejections: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[config.Rejection])
	if err != nil {
		return nil, fmt.Errorf("pgconfig: rejections: %w", err)
	}
	return out, nil
}
