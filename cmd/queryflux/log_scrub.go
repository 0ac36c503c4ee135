package main

// The last line of defence for secrets in logs: every value the
// configuration holds as a secret (tokens, passwords, passwords inside URLs, credential
// options, password hashes) is replaced by [redacted] in every log line before it is written,
// whatever carried it there (an engine's error text, a library's message). config.Secret
// already prints as [redacted]; this catches the copies that are plain strings.

import (
	"encoding/json"
	"io"
	"maps"
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

// configSecrets lists every secret value cfg holds, with the escaped forms a URL carries them in.
func configSecrets(cfg *config.Config) []string { return config.ScrubForms(cfg.SecretValues()) }
