package controlplane

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// clockSkewWarn is the difference between a worker's and the control plane's clocks worth a warning.
const clockSkewWarn = 5 * time.Second

// supersedeWarnWindow is how long repeated re-registrations under one name stay a warning.
const supersedeWarnWindow = 10 * time.Minute

func (cp *ControlPlane) handleRegister(w http.ResponseWriter, r *http.Request) {
	secret, _ := workerapi.BearerToken(r)
	if !workerapi.TokenEqual(secret, cp.cfg.WorkerSecret) {
		cp.metrics.registrations.WithLabelValues("unauthorized").Inc()
		workerapi.WriteError(w, http.StatusUnauthorized, "registration needs the shared worker secret as a bearer token", "Authorization")
		return
	}
	body, err := workerapi.ReadBody(r, workerapi.MediaWorkerRegister)
	if err == nil {
		var req workerapi.RegisterRequest
		if req, err = workerapi.DecodeRegister(body); err == nil {
			cp.acceptRegistration(r.Context(), w, req)
			return
		}
	}
	cp.metrics.registrations.WithLabelValues("bad_request").Inc()
	workerapi.WriteBadRequest(w, err)
}

func (cp *ControlPlane) acceptRegistration(ctx context.Context, w http.ResponseWriter, req workerapi.RegisterRequest) {
	token := cp.newToken()
	now := cp.e.Now()
	prev, err := cp.register(req, token, now)
	log := cp.e.Logger()
	if err != nil {
		cp.metrics.registrations.WithLabelValues("full").Inc()
		cp.noteRefused(req.Name, err, now)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(cp.cfg.StaleAfter.Seconds()+cp.cfg.EvictGrace.Seconds()))))
		workerapi.WriteError(w, http.StatusTooManyRequests, err.Error(), "name")
		return
	}
	cp.wake.Notify()
	if prev != nil {
		cp.metrics.registrations.WithLabelValues("superseded").Inc()
		log.Warn("worker registered again under the same name: the newer registration wins, the older token is revoked",
			"worker", req.Name, "previousRegisteredAt", prev.RegisteredAt, "previousVersion", prev.Version, "version", req.Version)
		// Before the answer: the new session must find the old one's leases revoked.
		cp.endSession(ctx, req.Name, prev.TokenHash, "superseded")
	} else {
		cp.metrics.registrations.WithLabelValues("ok").Inc()
		log.Info("worker registered", "worker", req.Name, "version", req.Version, "labels", req.Labels)
	}
	workerapi.WriteJSON(w, http.StatusOK, workerapi.MediaWorkerRegistered, workerapi.RegisterResponse{
		Name: req.Name, Token: token, HeartbeatIntervalSecs: cp.cfg.HeartbeatInterval.Seconds(),
		CurrentRevision: cp.revisionOf(req.Name),
	})
}

func (cp *ControlPlane) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	name, hash, err := cp.authWorker(r)
	if err != nil {
		cp.metrics.heartbeats.WithLabelValues("unauthorized").Inc()
		cp.noteRefusedBeat("", "unauthorized", err, cp.e.Now())
		workerapi.WriteError(w, http.StatusUnauthorized, err.Error(), "Authorization")
		return
	}
	body, err := workerapi.ReadBody(r, workerapi.MediaHeartbeat)
	var hb workerapi.Heartbeat
	if err == nil {
		hb, err = workerapi.DecodeHeartbeat(body)
	}
	if err != nil {
		cp.metrics.heartbeats.WithLabelValues("bad_request").Inc()
		cp.noteRefusedBeat(name, "bad_request", err, cp.e.Now())
		workerapi.WriteBadRequest(w, err)
		return
	}
	tr, ok, err := cp.heartbeat(name, hash, hb, cp.e.Now())
	switch {
	case err != nil:
		cp.metrics.heartbeats.WithLabelValues("replayed").Inc()
		cp.noteRefusedBeat(name, "replayed", err, cp.e.Now())
		workerapi.WriteError(w, http.StatusConflict, err.Error(), "seq")
		return
	case !ok:
		cp.metrics.heartbeats.WithLabelValues("unauthorized").Inc()
		cp.noteRefusedBeat(name, "unauthorized", ErrUnauthorized, cp.e.Now())
		workerapi.WriteError(w, http.StatusUnauthorized, ErrUnauthorized.Error(), "Authorization")
		return
	}
	cp.metrics.heartbeats.WithLabelValues("ok").Inc()
	if tr.Changed() {
		cp.e.Logger().Info("worker recovered", "worker", name, "from", tr.From, "to", tr.To)
	}
	workerapi.WriteHeartbeatAck(w, workerapi.HeartbeatAck{
		State: tr.To, CurrentRevision: cp.revisionOf(name), HeartbeatIntervalSecs: cp.cfg.HeartbeatInterval.Seconds(),
	})
}

// authAdmin checks the admin token and answers 401 itself when it is wrong.
func (cp *ControlPlane) authAdmin(w http.ResponseWriter, r *http.Request) bool {
	token, _ := workerapi.BearerToken(r)
	if cp.cfg.AdminToken == "" {
		workerapi.WriteError(w, http.StatusUnauthorized, "admin API disabled: no admin token configured", "Authorization")
		return false
	}
	if !workerapi.TokenEqual(token, cp.cfg.AdminToken) {
		workerapi.WriteError(w, http.StatusUnauthorized, "admin API needs the admin token as a bearer token", "Authorization")
		return false
	}
	return true
}

func (cp *ControlPlane) handleAdminList(w http.ResponseWriter, r *http.Request) {
	if !cp.authAdmin(w, r) {
		return
	}
	workerapi.WriteJSON(w, http.StatusOK, workerapi.MediaWorkerList, cp.Workers())
}

func (cp *ControlPlane) handleAdminShow(w http.ResponseWriter, r *http.Request) {
	if !cp.authAdmin(w, r) {
		return
	}
	info, ok := cp.Worker(r.PathValue("name"))
	if !ok {
		workerapi.WriteError(w, http.StatusNotFound, "no worker named "+r.PathValue("name"), "name")
		return
	}
	workerapi.WriteJSON(w, http.StatusOK, workerapi.MediaWorkerInfo, info)
}

// info renders en for the admin API; callers hold mu.
func (cp *ControlPlane) info(en *entry, now time.Time) workerapi.WorkerInfo {
	rec := en.snapshot()
	wi := workerapi.WorkerInfo{
		Name: rec.Name, Online: en.life.Online(), State: en.life.State, StateSince: en.life.StateSince, RegisteredAt: rec.RegisteredAt,
		Labels: rec.Labels, Version: rec.Version, Frontends: rec.Frontends, Heartbeat: rec.Heartbeat,
		Warnings: []string{},
	}
	if wi.Labels == nil {
		wi.Labels = map[string]string{}
	}
	if wi.Frontends == nil {
		wi.Frontends = []string{}
	}
	if hb := rec.Heartbeat; hb != nil {
		wi.LastHeartbeat = rec.LastHeartbeat
		wi.Revision = hb.Revision.Active
		wi.Health = hb.Health.State
	}
	want, groups := cp.servedFor(rec.Labels)
	wi.Groups = append([]string{}, groups...)
	wi.Current = wi.Revision == want
	wi.Warnings = cp.warnings(en, wi, want, now)
	return wi
}

// warnings say in words what an operator should look at.
func (cp *ControlPlane) warnings(en *entry, wi workerapi.WorkerInfo, want string, now time.Time) []string {
	rec := &en.rec
	out := []string{}
	silent := now.Sub(en.life.LastSeen).Round(time.Second)
	switch en.life.State {
	case workerapi.StateStale:
		left := (cp.cfg.EvictGrace - now.Sub(en.life.StateSince)).Round(time.Second)
		out = append(out, fmt.Sprintf("no heartbeat for %v: stale, evicted in %v unless it beats", silent, max(left, 0)))
	case workerapi.StateEvicted:
		out = append(out, fmt.Sprintf("evicted at %s after %v without a heartbeat", en.life.StateSince.UTC().Format(time.RFC3339), en.life.StateSince.Sub(en.life.LastSeen).Round(time.Second)))
	}
	if sc := cp.supersedes[wi.Name]; sc.count > 1 && now.Sub(sc.last) < supersedeWarnWindow {
		out = append(out, fmt.Sprintf("registered %d times while still online (last %v ago): do two processes share this name?",
			sc.count+1, now.Sub(sc.last).Round(time.Second)))
	}
	hb := wi.Heartbeat
	if hb == nil {
		if wi.Online {
			out = append(out, "no heartbeat received since registration")
		}
		return out
	}
	if hb.Health.State == workerapi.HealthUnhealthy {
		out = append(out, fmt.Sprintf("worker reports itself unhealthy (loop lag %.3fs)", hb.Health.LoopLagSeconds))
	}
	if !wi.Current {
		out = append(out, fmt.Sprintf("runs revision %q, the control plane's current revision for it is %q", wi.Revision, want))
	}
	if n := hb.Config.ConsecutiveSyncFailures; n > 0 {
		out = append(out, fmt.Sprintf("config sync failing: %d failures in a row", n))
	}
	if hb.History.Dropped > 0 {
		out = append(out, fmt.Sprintf("%d query history records dropped", hb.History.Dropped))
	}
	if skew := hb.SentAt.Sub(rec.LastHeartbeat); math.Abs(float64(skew)) > float64(clockSkewWarn) {
		out = append(out, fmt.Sprintf("clock skew of about %v between worker and control plane", skew.Round(time.Second)))
	}
	return out
}
