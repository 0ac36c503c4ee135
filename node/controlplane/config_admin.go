package controlplane

// The admin side of configuration:
//
//	GET  /admin/config        the served snapshot, credentials redacted
//	POST /admin/config/check  a YAML body compiled: 200, or 422 with every error and its path
//	PUT  /admin/config        a YAML body stored as the new configuration (when it is editable),
//	                          under the rules of config_admin_guard.go (If-Match, ?force=true)

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Admin config endpoints.
const (
	PathAdminConfig      = "/admin/config"
	PathAdminConfigCheck = "/admin/config/check"
	// adminConfigBodyMax bounds an uploaded configuration (config.Parse checks it again, with
	// the nesting and node limits, before parsing).
	adminConfigBodyMax = config.DocumentBytesMax
)

// ConfigStore is an editable configuration (pgconfig.Source is one). Update must compile the
// result and store it all or nothing; the store wakes the refresh loop itself (NOTIFY).
type ConfigStore interface {
	Update(ctx context.Context, edit func(*config.Config) error) error
}

// adminConfigAnswer is the body of the admin config endpoints.
type adminConfigAnswer struct {
	OK       bool              `json:"ok"`
	Revision string            `json:"revision,omitempty"`
	Errors   []adminFieldError `json:"errors,omitempty"`
	// Warnings are the engine check's problems when an edit was stored by force.
	Warnings []adminFieldError          `json:"warnings,omitempty"`
	Snapshot *snapshot.WorkerSnapshotV1 `json:"snapshot,omitempty"`
}

type adminFieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
}

// MountAdmin serves the admin config endpoints on cp, behind its admin token. store may be nil:
// the configuration then comes from a file and PUT answers 409.
func (s *ConfigServer) MountAdmin(cp *ControlPlane, store ConfigStore) {
	cp.HandleAdmin("GET "+PathAdminConfig, http.HandlerFunc(s.serveAdminConfig))
	s.mountHistory(cp)
	s.mountReview(cp)
	cp.HandleAdmin("POST "+PathAdminConfigCheck, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg, ok := s.readConfigBody(w, r, "")
		if !ok {
			return
		}
		rev, err := s.revisionOf(cfg)
		if err == nil {
			err = s.checkEngines(r.Context(), cfg)
		}
		if err != nil {
			writeConfigErrors(w, err)
			return
		}
		workerapi.WriteJSON(w, http.StatusOK, "application/json", adminConfigAnswer{OK: true, Revision: rev})
	}))
	cp.HandleAdmin("PUT "+PathAdminConfig, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if store == nil {
			workerapi.WriteError(w, http.StatusConflict, "the configuration comes from a file; edit the file", "")
			return
		}
		cfg, ok := s.readConfigBody(w, r, sourcePut)
		if !ok {
			return
		}
		s.storeWith(w, r, sourcePut, store.Update, cfg)
	}))
}

// serveAdminConfig answers the served snapshot with every secret hidden (redactedSnapshot);
// its ETag is the revision, for the If-Match of the next PUT.
func (s *ConfigServer) serveAdminConfig(w http.ResponseWriter, r *http.Request) {
	cur := s.Current()
	if cur == nil {
		workerapi.WriteError(w, http.StatusServiceUnavailable, "no configuration published yet", "")
		return
	}
	w.Header().Set("ETag", snapshot.ETag(cur.Revision))
	workerapi.WriteJSON(w, http.StatusOK, "application/json", adminConfigAnswer{OK: true, Revision: cur.Revision, Snapshot: redactedSnapshot(cur)})
}

// readConfigBody parses a YAML configuration from the request body (its node-local section is
// ignored: it belongs to each node's own file). An invalid document sent by an edit (source
// not empty) is recorded as refused.
func (s *ConfigServer) readConfigBody(w http.ResponseWriter, r *http.Request, source string) (*config.Config, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, adminConfigBodyMax+1))
	if err != nil {
		workerapi.WriteError(w, http.StatusBadRequest, "reading the body: "+err.Error(), "")
		return nil, false
	}
	if len(body) > adminConfigBodyMax {
		workerapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("configuration larger than the limit of %d bytes", adminConfigBodyMax), "")
		return nil, false
	}
	if config.IsEmptyDocument(body) {
		workerapi.WriteError(w, http.StatusBadRequest, "empty configuration: send the whole YAML document (an edit that removes every cluster or user also needs ?force=true)", "")
		return nil, false
	}
	cfg, err := config.Parse(body)
	if err != nil {
		s.refuse(w, r, source, err)
		return nil, false
	}
	cfg.QueryFlux = config.QueryFlux{}
	config.ApplyDefaults(cfg)
	return cfg, true
}

// writeConfigErrors answers 422 with every configuration error, or 500 for anything else.
func writeConfigErrors(w http.ResponseWriter, err error) {
	var errs config.Errors
	if !errors.As(err, &errs) {
		workerapi.WriteError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	workerapi.WriteJSON(w, http.StatusUnprocessableEntity, "application/json", adminConfigAnswer{Errors: fieldErrors(errs)})
}
