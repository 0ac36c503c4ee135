package controlplane

// Stored configuration revisions on the admin API:
//
//	GET  /admin/config/history?limit=N     the newest stored revisions, newest first
//	POST /admin/config/rollback?to=REF     store revision REF (a row id or a snapshot revision)
//	                                       again, under PUT's rules (If-Match, ?force=true,
//	                                       engine check)

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Admin config history endpoints.
const (
	PathAdminConfigHistory  = "/admin/config/history"
	PathAdminConfigRollback = "/admin/config/rollback"
)

// historyLimitDefault is how many revisions GET /admin/config/history lists without ?limit.
const historyLimitDefault = 20

// ConfigHistory is a store that keeps every configuration it stored (pgconfig.Source is one).
type ConfigHistory interface {
	History(ctx context.Context, limit int) ([]config.StoredRevision, error)
	// Stored is the configuration stored as ref; config.ErrNoRevision (wrapped) when there is
	// none.
	Stored(ctx context.Context, ref string) (*config.Config, config.StoredRevision, error)
	// UpdateNoted is ConfigStore.Update recording note with the new revision.
	UpdateNoted(ctx context.Context, note string, edit func(*config.Config) error) error
}

// configHistoryAnswer is the body of GET /admin/config/history.
type configHistoryAnswer struct {
	Revisions []config.StoredRevision `json:"revisions"`
}

// mountHistory serves the history endpoints when the daemon keeps revisions.
func (s *ConfigServer) mountHistory(cp *ControlPlane) {
	h := s.adminOptions().History
	if h == nil {
		return
	}
	cp.HandleAdmin("GET "+PathAdminConfigHistory, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, ok := limitParam(w, r)
		if !ok {
			return
		}
		revs, err := h.History(r.Context(), limit)
		if err != nil {
			s.writeStoreError(w, r, "", err)
			return
		}
		workerapi.WriteJSON(w, http.StatusOK, "application/json", configHistoryAnswer{Revisions: revs})
	}))
	cp.HandleAdmin("POST "+PathAdminConfigRollback, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := r.URL.Query().Get("to")
		if ref == "" {
			workerapi.WriteError(w, http.StatusBadRequest, "to: the revision to roll back to (an id or a revision from GET "+PathAdminConfigHistory+")", "to")
			return
		}
		cfg, rev, err := h.Stored(r.Context(), ref)
		if errors.Is(err, config.ErrNoRevision) {
			workerapi.WriteError(w, http.StatusNotFound, fmt.Sprintf("no stored revision %q", ref), "to")
			return
		}
		if err != nil {
			s.writeStoreError(w, r, "", err)
			return
		}
		note := fmt.Sprintf("rollback to %d", rev.ID)
		s.storeWith(w, r, note, func(ctx context.Context, edit func(*config.Config) error) error {
			return h.UpdateNoted(ctx, note, edit)
		}, cfg)
	}))
}
