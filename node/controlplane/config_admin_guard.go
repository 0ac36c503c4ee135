package controlplane

// The safety rails of PUT /admin/config: an edit names the revision
// it was made against (If-Match, the ETag of GET /admin/config: 412 when another edit came
// first), an edit that removes every cluster or every user needs ?force=true, a configuration
// whose engines cannot be opened is refused with the clusters named (with ?force=true it is
// stored, and the problems come back as warnings), a lost write race answers
// 409 (never 500), and what GET shows has every password, hash and credential option hidden.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/workerapi"
)

// adminPublishTimeout bounds how long a PUT waits to see its revision served, so that a GET
// right after it shows (and its ETag names) the new configuration. A revision is published
// after the control plane's own node has applied the one before (OnChange runs in the
// publisher), which opens that configuration's engines: at load 35 that took over 10 s, the
// clients' own timeout (the CLI's and the tests'). Past this bound the PUT answers that its
// revision is stored but not served yet.
const adminPublishTimeout = 5 * time.Second

// AdminOptions are what the admin config endpoints take from the daemon. Zero values work.
type AdminOptions struct {
	// Revision is the revision a stored configuration is served under (what GET's ETag names);
	// nil means snapshot.Build's with default options.
	Revision func(cfg *config.Config) (string, error)
	// CheckEngines reports, as config.Errors, every cluster that cannot be opened (a DuckDB
	// file in a missing directory, an engine that cannot be reached or refuses the login). It
	// runs on POST /admin/config/check and before an edit is stored. Nil checks nothing.
	CheckEngines func(ctx context.Context, cfg *config.Config) error
	// History keeps stored revisions for GET /admin/config/history and
	// POST /admin/config/rollback (nil: those answer 404).
	History ConfigHistory
	// Rejections records refused edits for GET /admin/config/rejections (nil: they are only
	// answered, and that endpoint answers 404).
	Rejections RejectionLog
}

// SetAdminOptions sets the admin endpoints' hooks; call it before MountAdmin.
func (s *ConfigServer) SetAdminOptions(o AdminOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admin = o
}

func (s *ConfigServer) adminOptions() AdminOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admin
}

// errPreconditionFailed is an If-Match naming a revision other than the stored one.
var errPreconditionFailed = errors.New("the configuration changed since the revision named in If-Match; GET it again and retry")

// revisionOf is the revision cfg is served under.
func (s *ConfigServer) revisionOf(cfg *config.Config) (string, error) {
	if rev := s.adminOptions().Revision; rev != nil {
		return rev(cfg)
	}
	snap, err := snapshot.Build(config.Clone(cfg), snapshot.Options{})
	if err != nil {
		return "", err
	}
	return snap.Revision, nil
}

// checkEngines runs the daemon's engine check, if any.
func (s *ConfigServer) checkEngines(ctx context.Context, cfg *config.Config) error {
	if check := s.adminOptions().CheckEngines; check != nil {
		return check(ctx, cfg)
	}
	return nil
}

// storeWith answers an edit (source: PUT /admin/config, or a rollback) once its configuration
// parsed: it checks the engines, then stores cfg through update (a store's Update, or a noted
// one for a rollback) under the If-Match and force rules, and waits (bounded) until the new
// revision is served.
func (s *ConfigServer) storeWith(w http.ResponseWriter, r *http.Request, source string, update func(context.Context, func(*config.Config) error) error, cfg *config.Config) {
	force, err := forceParam(r)
	if err != nil {
		workerapi.WriteError(w, http.StatusBadRequest, err.Error(), "force")
		return
	}
	var warnings []adminFieldError
	if err := s.checkEngines(r.Context(), cfg); err != nil {
		var errs config.Errors
		if !force || !errors.As(err, &errs) {
			s.refuse(w, r, source, err)
			return
		}
		// Forced: the engines may come up later, or the workers reach what this host cannot.
		warnings = fieldErrors(errs)
		s.env.Logger().Warn("configuration stored by force although some engines cannot be opened", "problems", rejectionReason(err))
	}
	ifMatch := r.Header.Get("If-Match")
	before := s.servedRevision()
	err = update(r.Context(), func(stored *config.Config) error {
		if err := s.checkIfMatch(stored, ifMatch); err != nil {
			return err
		}
		if !force {
			if err := CheckWipe(stored, cfg); err != nil {
				return err
			}
		}
		local := stored.QueryFlux
		*stored = *config.Clone(cfg)
		stored.QueryFlux = local
		return nil
	})
	if err != nil {
		s.writeStoreError(w, r, source, err)
		return
	}
	rev, err := s.revisionOf(cfg)
	if err != nil {
		s.refuse(w, r, source, err)
		return
	}
	if !s.waitServed(r.Context(), before, rev) {
		warnings = append(warnings, adminFieldError{Message: fmt.Sprintf("stored as revision %s, but not served within %s: "+
			"the control plane is still applying an earlier configuration (opening its engines); GET %s shows it once served",
			rev, adminPublishTimeout, PathAdminConfig)})
	}
	w.Header().Set("ETag", snapshot.ETag(rev))
	workerapi.WriteJSON(w, http.StatusOK, "application/json", adminConfigAnswer{OK: true, Revision: rev, Warnings: warnings})
}

// writeStoreError answers a refused edit: 412 for a stale If-Match, 409 for a write race the
// store could not win by retrying, 422 for an invalid configuration (recorded as refused when
// source names an edit), and 500 (logged, with no detail in the answer) for anything else.
func (s *ConfigServer) writeStoreError(w http.ResponseWriter, r *http.Request, source string, err error) {
	var errs config.Errors
	switch {
	case errors.Is(err, errPreconditionFailed):
		workerapi.WriteError(w, http.StatusPreconditionFailed, err.Error(), "If-Match")
	case errors.Is(err, config.ErrEditConflict):
		workerapi.WriteError(w, http.StatusConflict, "another edit of the configuration ran at the same time; GET it again and retry", "")
	case errors.As(err, &errs):
		s.refuse(w, r, source, err)
	default:
		s.env.Logger().Error("storing the configuration failed", "err", redact.Error(err))
		workerapi.WriteError(w, http.StatusInternalServerError, "storing the configuration failed (see the control plane's log)", "")
	}
}

// forceParam reads ?force=true.
func forceParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("force")
	if v == "" {
		return false, nil
	}
	force, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("force=%q: want true or false", v)
	}
	return force, nil
}

// checkIfMatch accepts an empty If-Match (no precondition), "*", or a list of entity tags one of
// which is the stored configuration's revision.
func (s *ConfigServer) checkIfMatch(stored *config.Config, ifMatch string) error {
	ifMatch = strings.TrimSpace(ifMatch)
	if ifMatch == "" || ifMatch == "*" {
		return nil
	}
	rev, err := s.revisionOf(stored)
	if err != nil {
		return err
	}
	for _, tag := range strings.Split(ifMatch, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if strings.Trim(tag, `"`) == rev {
			return nil
		}
	}
	return errPreconditionFailed
}

// CheckWipe refuses, without force, a configuration that removes every cluster or every user
// while some are stored: one such edit would leave the fleet unable to run a query, or let a
// protected user in without a password.
func CheckWipe(stored, next *config.Config) error {
	var errs config.Errors
	if n := len(stored.Clusters); n > 0 && len(next.Clusters) == 0 {
		errs = append(errs, config.FieldError{Path: "clusters",
			Message: fmt.Sprintf("removes every cluster (%d stored); to do that on purpose, add ?force=true (CLI: --force)", n)})
	}
	if n := len(stored.Settings.Security.Users); n > 0 && len(next.Settings.Security.Users) == 0 {
		errs = append(errs, config.FieldError{Path: "settings.security.users",
			Message: fmt.Sprintf("removes every user (%d stored): clients would log in without a password; to do that on purpose, add ?force=true (CLI: --force)", n)})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// waitServed waits until the served revision is rev, or another one than before (a later edit
// superseded this one), or adminPublishTimeout passes (served is then false).
func (s *ConfigServer) waitServed(ctx context.Context, before, rev string) (served bool) {
	ctx, cancel := s.env.WithTimeout(ctx, adminPublishTimeout)
	defer cancel()
	for {
		seen := s.changed.Seq()
		if cur := s.servedRevision(); cur == rev || cur != before {
			return true
		}
		if s.changed.Wait(ctx, seen) != nil {
			return false
		}
	}
}

func (s *ConfigServer) servedRevision() string {
	if cur := s.Current(); cur != nil {
		return cur.Revision
	}
	return ""
}

// redactedSnapshot is cur as GET /admin/config shows it: engine passwords and tokens, passwords
// inside endpoints and credential options, and users' password hashes hidden.
func redactedSnapshot(cur *snapshot.WorkerSnapshotV1) *snapshot.WorkerSnapshotV1 {
	out := *cur
	out.Clusters = make([]snapshot.Cluster, len(cur.Clusters))
	for i, c := range cur.Clusters {
		c.Credentials.Password = config.Secret(c.Credentials.Password).String()
		c.Credentials.Token = config.Secret(c.Credentials.Token).String()
		c.Endpoint = config.RedactURL(c.Endpoint)
		c.Options = config.RedactOptions(c.Options)
		out.Clusters[i] = c
	}
	users := cur.Settings.Security.Users
	if users == nil {
		return &out
	}
	out.Settings.Security.Users = make([]config.User, len(users))
	for i, u := range users {
		u.PasswordHash = config.RedactHash(u.PasswordHash)
		out.Settings.Security.Users[i] = u
	}
	return &out
}
