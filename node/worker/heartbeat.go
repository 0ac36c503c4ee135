package worker

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// heartbeatJitter spreads a fleet's heartbeats so they do not arrive in waves.
const heartbeatJitter = 0.1

// beat is the heartbeat duty: one heartbeat, the next one an interval later (jittered), or at
// once when HeartbeatNow is called (the self-health probe does so on every change). The first
// beat registers the worker.
func (w *Worker) beat(ctx context.Context, _ time.Time) time.Time {
	err := w.SendHeartbeat(ctx)
	w.logHeartbeatResult(ctx, err)
	w.mu.Lock()
	wait := w.interval
	w.mu.Unlock()
	// A control plane that answered 429 or 503 with a Retry-After (to the heartbeat or to the
	// registration before it) hears from this worker no sooner.
	return w.e.Now().Add(max(env.Jitter(w.e.Rand(), wait, heartbeatJitter), workerapi.RetryAfter(err)))
}

// failureLogEvery keeps a long control-plane outage from filling the log: the first failure is
// logged, then every failureLogEvery-th, then the recovery.
const failureLogEvery = 30

func (w *Worker) logHeartbeatResult(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	failures := w.failures
	msg := ""
	if err != nil {
		// As the status shows it: an answer that echoes the worker's secret or token does
		// not reach the log.
		msg = w.redactLocked(err.Error())
	}
	w.mu.Unlock()
	log := w.e.Logger()
	switch {
	case err != nil && (failures == 1 || failures%failureLogEvery == 0):
		log.Warn("heartbeat failed", "worker", w.cfg.Name, "failuresInARow", failures, "err", msg)
	case err == nil && w.recovering():
		log.Info("heartbeats reach the control plane again", "worker", w.cfg.Name)
	}
}

// recovering reports (once) that heartbeats succeed after failures.
func (w *Worker) recovering() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.failedBefore
	w.failedBefore = false
	return was
}

// buildHeartbeat assembles the next heartbeat: the worker's own fields, then every contributor's.
func (w *Worker) buildHeartbeat() workerapi.Heartbeat {
	now := w.e.Now()
	w.mu.Lock()
	w.seq++
	hb := workerapi.Heartbeat{
		Seq: w.seq, SentAt: now, Frontends: slices.Clone(w.cfg.Frontends), Health: w.health.Status(),
	}
	w.mu.Unlock()
	w.contribute(&hb)
	hb.Sanitize()
	if err := hb.Validate(); err != nil {
		panic(fmt.Sprintf("worker: a heartbeat contributor made an invalid heartbeat: %v", err))
	}
	return hb
}

// SendHeartbeat sends one heartbeat now and records the answer.
func (w *Worker) SendHeartbeat(ctx context.Context) error {
	hb := w.buildHeartbeat()
	err := w.postHeartbeat(ctx, hb)
	w.mu.Lock()
	w.lastSentAt = hb.SentAt
	if err != nil {
		w.failures++
		w.failedBefore = true
		w.lastError = w.redactLocked(err.Error())
	} else {
		w.failures = 0
		w.lastError = ""
	}
	w.mu.Unlock()
	result := "ok"
	if err != nil {
		result = "error"
	}
	w.metrics.heartbeats.WithLabelValues(result).Inc()
	return err
}

func (w *Worker) postHeartbeat(ctx context.Context, hb workerapi.Heartbeat) error {
	body, err := workerapi.EncodeHeartbeat(&hb)
	if err != nil {
		panic(fmt.Sprintf("worker: encoding a heartbeat: %v", err))
	}
	rctx, cancel := w.e.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	resp, err := w.Post(rctx, workerapi.PathHeartbeat, workerapi.MediaHeartbeat, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return workerapi.ResponseError(resp, w.e.Now())
	}
	// Read whole into a buffer of the announced size: a json.Decoder would grow its own buffer
	// for every answer.
	var ack workerapi.HeartbeatAck
	data, err := workerapi.ReadAtMost(resp.Body, resp.ContentLength, workerapi.BodyBytesMax)
	if err == nil {
		ack, err = workerapi.DecodeHeartbeatAck(data)
	}
	if err != nil {
		return fmt.Errorf("worker: unreadable heartbeat answer: %w", err)
	}
	w.adoptInterval(ack.HeartbeatIntervalSecs)
	now := w.e.Now()
	w.mu.Lock()
	w.lastAck, w.lastAckAt = ack, now
	hooks := slices.Clone(w.ackHooks)
	w.mu.Unlock()
	for _, fn := range hooks {
		fn(ack)
	}
	return nil
}

// probeLag is the self-health probe, a timed duty: every probe interval it measures how late
// the loop's timer woke for it. Lag means the process is starved (CPU, GC, a blocked runtime):
// a worker that cannot wake on time cannot serve on time.
func (w *Worker) probeLag(_ context.Context, due time.Time) time.Time {
	now := w.e.Now()
	w.ObserveLag(now, max(now.Sub(due), 0))
	return now.Add(w.cfg.HealthProbeInterval)
}

// ObserveLag feeds one probe result to the health state machine. The probe duty calls it; the
// simulator may call it directly.
func (w *Worker) ObserveLag(now time.Time, lag time.Duration) {
	w.mu.Lock()
	prev := w.health.LastLag
	changed := w.health.Observe(now, lag)
	state := w.health.State
	w.mu.Unlock()
	if lag != prev { // the gauge always holds LastLag (both start at 0): skip the no-op write
		w.metrics.loopLag.Set(lag.Seconds())
	}
	if !changed {
		return
	}
	w.metrics.healthTransitions.WithLabelValues(state).Inc()
	w.e.Logger().Warn("worker self-health changed", "worker", w.cfg.Name, "state", state, "loopLag", lag)
	w.HeartbeatNow() // the control plane hears about it now, not at the next interval
}

func (w *Worker) redactLocked(s string) string {
	for _, secret := range []string{w.cfg.Secret, w.token, w.base.User.String()} {
		if secret != "" {
			s = replaceAll(s, secret)
		}
	}
	return s
}

// contribute lets every contributor fill its sections of hb. It must run without w.mu held.
func (w *Worker) contribute(hb *workerapi.Heartbeat) {
	w.mu.Lock()
	contributors := slices.Clone(w.contributors)
	w.mu.Unlock()
	for _, fn := range contributors {
		fn(hb)
	}
}

// contributed is what the contributors would put in the next heartbeat, for /worker/status.
func (w *Worker) contributed() workerapi.Heartbeat {
	var hb workerapi.Heartbeat
	w.contribute(&hb)
	hb.Sanitize()
	return hb
}
