package controlplane

// Reviewing configuration edits on the admin API:
//
//	GET /admin/config/rejections?limit=N   the newest refused edits and why, newest first
//	GET /admin/config/diff?from=REF&to=REF two stored revisions (to: the served one when empty)
//	                                       as redacted snapshots, line by line

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/linediff"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Admin config review endpoints.
const (
	PathAdminConfigRejections = "/admin/config/rejections"
	PathAdminConfigDiff       = "/admin/config/diff"
)

// sourcePut names edits sent with PUT /admin/config in the rejection log.
const sourcePut = "PUT " + PathAdminConfig

// RejectionLog keeps refused configuration edits (pgconfig.Source is one).
type RejectionLog interface {
	Reject(ctx context.Context, source, reason string) error
	Rejections(ctx context.Context, limit int) ([]config.Rejection, error)
}

// configRejectionsAnswer is the body of GET /admin/config/rejections.
type configRejectionsAnswer struct {
	Rejections []config.Rejection `json:"rejections"`
}

// configDiffAnswer is the body of GET /admin/config/diff: Lines is the unified listing of
// the two redacted snapshots (each line starts with " ", "-" or "+").
type configDiffAnswer struct {
	From    config.StoredRevision `json:"from"`
	To      config.StoredRevision `json:"to"`
	Changed bool                  `json:"changed"`
	Lines   []string              `json:"lines"`
}

// refuse answers 422 with err's configuration errors and, when source names an edit, records
// the refusal. A log that cannot be written is logged, never a reason to answer otherwise.
func (s *ConfigServer) refuse(w http.ResponseWriter, r *http.Request, source string, err error) {
	if log := s.adminOptions().Rejections; log != nil && source != "" {
		if rerr := log.Reject(r.Context(), source, rejectionReason(err)); rerr != nil {
			s.env.Logger().Warn("recording a refused configuration edit failed", "err", redact.Error(rerr))
		}
	}
	writeConfigErrors(w, err)
}

// rejectionReason is err as one line per field error ("path: message"), as the API answered.
func rejectionReason(err error) string {
	var errs config.Errors
	if !errors.As(err, &errs) {
		return err.Error()
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Path + ": " + e.Message
		if e.Line > 0 {
			lines[i] = fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Message)
		}
	}
	return strings.Join(lines, "\n")
}

// mountReview serves the rejection log and the diff of stored revisions.
func (s *ConfigServer) mountReview(cp *ControlPlane) {
	opts := s.adminOptions()
	if log := opts.Rejections; log != nil {
		cp.HandleAdmin("GET "+PathAdminConfigRejections, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			limit, ok := limitParam(w, r)
			if !ok {
				return
			}
			list, err := log.Rejections(r.Context(), limit)
			if err != nil {
				s.writeStoreError(w, r, "", err)
				return
			}
			workerapi.WriteJSON(w, http.StatusOK, "application/json", configRejectionsAnswer{Rejections: list})
		}))
	}
	if h := opts.History; h != nil {
		cp.HandleAdmin("GET "+PathAdminConfigDiff, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveDiff(w, r, h)
		}))
	}
}

// limitParam reads ?limit=N (historyLimitDefault when absent).
func limitParam(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return historyLimitDefault, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		workerapi.WriteError(w, http.StatusBadRequest, fmt.Sprintf("limit=%q: want a positive integer", v), "limit")
		return 0, false
	}
	return n, true
}

func (s *ConfigServer) serveDiff(w http.ResponseWriter, r *http.Request, h ConfigHistory) {
	q := r.URL.Query()
	from := q.Get("from")
	if from == "" {
		workerapi.WriteError(w, http.StatusBadRequest, "from: the stored revision to compare (an id or a revision from GET "+PathAdminConfigHistory+")", "from")
		return
	}
	to := q.Get("to")
	if to == "" {
		to = s.servedRevision()
	}
	var ans configDiffAnswer
	var texts [2][]string
	for i, ref := range []string{from, to} {
		cfg, rev, err := h.Stored(r.Context(), ref)
		if errors.Is(err, config.ErrNoRevision) {
			workerapi.WriteError(w, http.StatusNotFound, fmt.Sprintf("no stored revision %q", ref), []string{"from", "to"}[i])
			return
		}
		if err != nil {
			s.writeStoreError(w, r, "", err)
			return
		}
		text, err := redactedText(cfg)
		if err != nil {
			s.writeStoreError(w, r, "", err)
			return
		}
		texts[i] = text
		if i == 0 {
			ans.From = rev
		} else {
			ans.To = rev
		}
	}
	ans.Lines, ans.Changed = linediff.Unified(texts[0], texts[1], 3)
	workerapi.WriteJSON(w, http.StatusOK, "application/json", ans)
}

// redactedText is cfg's snapshot as GET /admin/config shows it, one JSON line per field, so a
// diff names the field that changed and never a secret.
func redactedText(cfg *config.Config) ([]string, error) {
	snap, err := snapshot.Build(config.Clone(cfg), snapshot.Options{})
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(redactedSnapshot(snap), "", "  ")
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}
