package worker

import (
	"context"
	"time"
)

// WithTimeout makes lagEnv's timeouts fire late too, as a starved process's do: the worker's
// duty loop (env.Loop) sleeps with one, and its self-health probe measures how late it wakes.
func (l *lagEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return l.Env.WithTimeout(ctx, d+time.Duration(l.lag.Load()))
}
