package query

import "log/slog"

// Hidden is a failure whose detail a client must not see: an engine's address, user or
// database, the control plane's URL. Frontends find Public through errors.As (*Error) and
// show only it; Error() is Public's text too, so no fallback prints the detail. Logged through
// slog, it prints Detail (LogValue), so the operator sees what happened.
type Hidden struct {
	Public *Error
	Detail error
}

func (h *Hidden) Error() string        { return h.Public.Error() }
func (h *Hidden) Unwrap() error        { return h.Public }
func (h *Hidden) LogValue() slog.Value { return slog.StringValue(h.Detail.Error()) }

// EngineUnavailable is what a client sees when its cluster's engine cannot be reached (or
// refused the proxy's login); detail is for the log. Engines pass cluster "" (the proxy core
// names the cluster).
func EngineUnavailable(cluster string, detail error) *Hidden {
	what := "the engine"
	if cluster != "" {
		what = "the engine of cluster " + cluster
	}
	return &Hidden{Detail: detail, Public: &Error{Code: CodeEngineUnavailable, Retryable: true,
		Message: what + " cannot be reached; retry later (details are in the QueryFlux log)"}}
}

// CoordinationUnavailable is what a client sees when capacity cannot be coordinated (the
// control plane is unreachable); detail is for the log.
func CoordinationUnavailable(detail error) *Hidden {
	return &Hidden{Detail: detail, Public: &Error{Code: CodeCoordinationUnavailable, Retryable: true,
		Message: "capacity coordination is unavailable; retry later (details are in the QueryFlux log)"}}
}
