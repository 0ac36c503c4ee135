package main

// The last line of defence for secrets in logs (the CONFIG engineer's file): every value the
// configuration holds as a secret (tokens, passwords, passwords inside URLs, credential
// options, password hashes) is replaced by [redacted] in every log line before it is written,
// whatever carried it there (an engine's error text, a library's message). config.Secret
// already prints as [redacted]; this catches the copies that are plain strings.

import (
	"encoding/json"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/queryflux/queryflux/internal/config"
)

// scrubLenMin is the shortest value scrubbed: shorter ones would mangle ordinary words.
const scrubLenMin = 6

// logScrub is the daemon's scrubbing log writer (serve wraps stderr with it).
var logScrub = &scrubWriter{}

// scrubSecrets makes the log scrubber replace cfg's secrets: every configuration a role applies.
func scrubSecrets(cfg *config.Config) { logScrub.add(configSecrets(cfg)...) }

// scrubWriter writes through to w with every known secret replaced.
type scrubWriter struct {
	mu       sync.Mutex
	w        io.Writer
	known    map[string]bool
	replacer *strings.Replacer
}

// to sets the writer scrubbed lines go to.
func (s *scrubWriter) to(w io.Writer) io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
	return s
}

// Write writes one log record (slog's handlers write a record per call) with secrets replaced.
func (s *scrubWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	w, r := s.w, s.replacer
	s.mu.Unlock()
	if r == nil {
		return w.Write(p)
	}
	if _, err := io.WriteString(w, r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// add makes values (and their JSON-escaped forms, for --log-format json) scrubbed from now on.
func (s *scrubWriter) add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[string]bool{}
	}
	changed := false
	for _, v := range values {
		if len(v) < scrubLenMin {
			continue
		}
		b, _ := json.Marshal(v)
		for _, form := range []string{v, string(b[1 : len(b)-1])} {
			if !s.known[form] {
				s.known[form], changed = true, true
			}
		}
	}
	if !changed {
		return
	}
	// Longest first, so a secret containing another is replaced whole.
	forms := slices.SortedFunc(maps.Keys(s.known), func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, "[redacted]")
	}
	s.replacer = strings.NewReplacer(pairs...)
}

// configSecrets lists every secret value cfg holds.
func configSecrets(cfg *config.Config) []string {
	q := cfg.QueryFlux
	out := []string{q.AdminAPI.Token.Reveal(), q.WorkerAPI.Secret.Reveal(), q.ControlPlane.Secret.Reveal(),
		q.Persistence.ConfigKey.Reveal(), q.Persistence.DatabaseURL.Reveal(), urlPassword(q.Persistence.DatabaseURL.Reveal())}
	creds := func(c config.Credentials) { out = append(out, c.Password.Reveal(), c.Token.Reveal()) }
	for _, c := range q.ClusterCredentials { // order does not matter: every value is listed
		creds(c)
	}
	for _, ec := range cfg.ExpandClusters() {
		creds(ec.Credentials)
		out = append(out, urlPassword(ec.Endpoint))
		for k, v := range ec.Options {
			if config.IsSecretOption(k) {
				out = append(out, v)
			} else {
				out = append(out, urlPassword(v))
			}
		}
	}
	for _, u := range cfg.Settings.Security.Users {
		out = append(out, u.PasswordHash)
	}
	return out
}

// urlPassword is the password of a URL ("" when it has none or is not a URL).
func urlPassword(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}
