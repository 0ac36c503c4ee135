package config

// What references in the shared sections may read. The clusters, users and settings of a
// configuration may come from whoever holds the admin token (PUT /admin/config, POST
// /admin/config/check), and a control plane resolves their references with its own
// environment and files, then sends the values to an engine whose endpoint the same document
// chose. So a shared reference may not name what the node's own section keeps (its database
// URL, config key, admin token, secrets), the product's own QUERYFLUX_ variables, or a file
// outside the directories queryflux.sharedSecrets.fileDirs lists.

import (
	"fmt"
	"path/filepath"
	"strings"
)

// DefaultSharedSecretDirs are where shared references may read files when
// queryflux.sharedSecrets.fileDirs is not set: where Docker and Kubernetes mount secrets.
var DefaultSharedSecretDirs = []string{"/run/secrets", "/var/run/secrets"}

// platformIdentityDirs are the directories, under the secret mounts, where Kubernetes and cloud
// platforms put the pod's own service-account tokens (Kubernetes, EKS, Azure workload identity):
// they identify the node to its platform and are never an engine's password.
var platformIdentityDirs = map[string]bool{"kubernetes.io": true, "eks.amazonaws.com": true, "azure": true}

// ownEnvPrefix names the product's own variables (QUERYFLUX_DATABASE_URL, QUERYFLUX_CONFIG_KEY,
// QUERYFLUX_ADMIN_TOKEN...), never readable from a shared section.
const ownEnvPrefix = "QUERYFLUX_"

// SharedSecretSource is src bounded for the shared sections of a node whose own section is
// local, as written (references unresolved), and whose configuration file is configFile ("" for
// none). A reference it refuses resolves to an error naming the reference and the rule.
func SharedSecretSource(local QueryFlux, configFile string, src SecretSource) SecretSource {
	p := &sharedSource{src: src, ownEnv: map[string]bool{}, ownFiles: map[string]bool{}}
	for _, d := range local.SharedSecrets.FileDirs {
		p.dirs = append(p.dirs, p.real(d))
	}
	if local.SharedSecrets.FileDirs == nil {
		for _, d := range DefaultSharedSecretDirs {
			p.dirs = append(p.dirs, p.real(d))
		}
	}
	p.envPrefixes = local.SharedSecrets.EnvPrefixes
	rec := &refRecorder{}
	for _, s := range ownSecrets(local) {
		_, _ = ResolveRefs(string(s), rec)
	}
	for _, name := range rec.env {
		p.ownEnv[name] = true
	}
	for _, f := range append(rec.files, configFile, local.TLS.KeyFile, local.ControlPlane.TLS.KeyFile) {
		if f != "" {
			p.ownFiles[p.real(f)] = true
		}
	}
	return p
}

// ownSecrets are the node's own secrets, as written: what opens its database, its stored
// secrets and its APIs. (queryflux.clusterCredentials are engine credentials, as the shared
// sections' are, and may name the same variables.)
func ownSecrets(q QueryFlux) []Secret {
	return []Secret{q.AdminAPI.Token, q.WorkerAPI.Secret, q.ControlPlane.Secret, q.Persistence.DatabaseURL, q.Persistence.ConfigKey}
}

// refRecorder is a SecretSource that notes what is looked up and finds everything, empty.
type refRecorder struct{ env, files []string }

func (r *refRecorder) LookupEnv(name string) (string, bool) {
	r.env = append(r.env, name)
	return "", true
}

func (r *refRecorder) ReadFile(path string) ([]byte, error) {
	r.files = append(r.files, path)
	return nil, nil
}

// sharedSource is SharedSecretSource's SecretSource.
type sharedSource struct {
	src         SecretSource
	dirs        []string // absolute, links followed
	envPrefixes []string // nil: any name not refused otherwise
	ownEnv      map[string]bool
	ownFiles    map[string]bool // absolute, links followed
}

// pathResolver is a SecretSource that can say which file a path names (OSSecrets: links
// followed); without it a path is judged as written, cleaned.
type pathResolver interface {
	RealPath(path string) (string, error)
}

// real is path absolute with its links followed, as far as the source can tell.
func (p *sharedSource) real(path string) string {
	if r, ok := p.src.(pathResolver); ok {
		if abs, err := r.RealPath(path); err == nil {
			return abs
		}
	}
	return filepath.Clean(path)
}

// refuse is why the reference kind:arg may not be read from a shared section, or nil.
func (p *sharedSource) refuse(kind, arg string) error {
	switch kind {
	case "env":
		return p.refuseEnv(arg)
	case "file":
		return p.refuseFile(arg)
	}
	return nil
}

func (p *sharedSource) refuseEnv(name string) error {
	switch {
	case strings.HasPrefix(name, ownEnvPrefix):
		return fmt.Errorf("${env:%s}: the %s* variables are the node's own; a shared section may not read them", name, ownEnvPrefix)
	case p.ownEnv[name]:
		return fmt.Errorf("${env:%s}: holds a secret of the node's own section (queryflux:); a shared section may not read it", name)
	case p.envPrefixes != nil && !hasAnyPrefix(name, p.envPrefixes):
		return fmt.Errorf("${env:%s}: not under queryflux.sharedSecrets.envPrefixes (%s)", name, strings.Join(p.envPrefixes, ", "))
	}
	return nil
}

func (p *sharedSource) refuseFile(path string) error {
	real := p.real(path)
	if p.ownFiles[real] {
		return fmt.Errorf("secret file %s: holds a secret of the node's own section (queryflux:) or is its configuration; a shared section may not read it", path)
	}
	for _, d := range p.dirs {
		rest, inside := strings.CutPrefix(real, strings.TrimSuffix(d, "/")+"/")
		if !inside || rest == "" {
			continue
		}
		if first, _, _ := strings.Cut(rest, "/"); platformIdentityDirs[first] {
			return fmt.Errorf("secret file %s: a platform's service-account identity (%s), never an engine's secret; a shared section may not read it", path, first)
		}
		return nil
	}
	return fmt.Errorf("secret file %s: outside the directories shared sections may read (queryflux.sharedSecrets.fileDirs: %s); add its directory there to allow it", path, strings.Join(p.dirs, ", "))
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (p *sharedSource) LookupEnv(name string) (string, bool) { return p.src.LookupEnv(name) }

// ReadFile reads the file refuseFile judged (links followed), not what the path names later.
func (p *sharedSource) ReadFile(path string) ([]byte, error) { return p.src.ReadFile(p.real(path)) }

// refGate is a SecretSource that refuses some references before they are looked up.
type refGate interface {
	refuse(kind, arg string) error
}
