package config

import (
	"net/url"
	"slices"
	"strings"
)

// SecretValues lists every secret value c holds, to scrub from text that may quote it (an
// engine's error, a library's message): its password and token, the password or credential
// parameters inside its endpoint URL, its credential options and the passwords inside the URLs
// of its other options. Empty values are left out.
func (c Cluster) SecretValues() []string {
	out := []string{c.Credentials.Password.Reveal(), c.Credentials.Token.Reveal()}
	out = append(out, urlSecrets(c.Endpoint)...)
	for _, k := range sortedKeys(c.Options) {
		if IsSecretOption(k) {
			out = append(out, c.Options[k])
		} else {
			out = append(out, urlSecrets(c.Options[k])...)
		}
	}
	return nonEmpty(out)
}

// SecretValues lists every secret value cfg holds: the node's tokens, secrets, database URL
// and config key, every cluster's and variant's (Cluster.SecretValues), the node's own cluster
// credentials, and every user's password hash.
func (cfg *Config) SecretValues() []string {
	q := cfg.QueryFlux
	out := []string{q.AdminAPI.Token.Reveal(), q.WorkerAPI.Secret.Reveal(), q.ControlPlane.Secret.Reveal(),
		q.Persistence.ConfigKey.Reveal(), q.Persistence.DatabaseURL.Reveal()}
	out = append(out, urlSecrets(q.Persistence.DatabaseURL.Reveal())...)
	for _, k := range sortedKeys(q.ClusterCredentials) {
		c := q.ClusterCredentials[k]
		out = append(out, c.Password.Reveal(), c.Token.Reveal())
	}
	for _, ec := range cfg.ExpandClusters() {
		out = append(out, ec.Cluster.SecretValues()...)
	}
	for _, u := range cfg.Settings.Security.Users {
		out = append(out, u.PasswordHash)
	}
	return nonEmpty(out)
}

// urlSecrets are the password and the credential query parameters of URL s (none when s is
// not a URL).
func urlSecrets(s string) []string {
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		pw, _ := u.User.Password()
		out = append(out, pw)
	}
	q := u.Query()
	for _, k := range sortedKeys(q) {
		if IsSecretOption(k) {
			out = append(out, q[k]...)
		}
	}
	return out
}

// ScrubSecrets replaces in msg every one of secrets, as written and in the escaped forms a URL
// or connection string carries it in, by "[redacted]"; longer secrets first, so one that
// contains another is hidden whole.
func ScrubSecrets(msg string, secrets []string) string {
	for _, s := range ScrubForms(secrets) {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	return msg
}

// ScrubForms is each non-empty secret with its URL-escaped forms, longest first.
func ScrubForms(secrets []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range secrets {
		for _, f := range []string{s, url.QueryEscape(s), url.PathEscape(s), (&url.URL{User: url.UserPassword("", s)}).User.String()[1:]} {
			if f != "" && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func nonEmpty(s []string) []string {
	out := s[:0]
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
