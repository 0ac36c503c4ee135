package config

// Secret references: a value written as ${env:NAME} or ${file:PATH} (alone, or as the password
// of an endpoint URL) is replaced at load time, on the node that loads it, by the environment
// variable's value or the file's content (one trailing newline dropped). References are taken
// only where a secret goes and is never shown, so one cannot be used to display a file. "$${"
// writes a literal "${". Errors name the variable or the file and the path of the field, never
// a value.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// secretFileBytesMax bounds a ${file:...} secret.
const secretFileBytesMax = 64 << 10

// SecretSource is where references are looked up: the process environment and files in
// production (OSSecrets), a map in tests and the simulator.
type SecretSource interface {
	LookupEnv(name string) (string, bool)
	ReadFile(path string) ([]byte, error)
}

// OSSecrets looks references up in the process environment and the file system.
//
//determinism:production production's SecretSource; the simulator and tests give MapSecrets
var OSSecrets SecretSource = osSecrets{}

//determinism:production production's SecretSource
type osSecrets struct{}

//determinism:production the process environment
func (osSecrets) LookupEnv(name string) (string, bool) { return os.LookupEnv(name) }

//determinism:production the file system
func (osSecrets) ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, secretFileBytesMax+1))
	if err != nil {
		return nil, err
	}
	if len(b) > secretFileBytesMax {
		return nil, fmt.Errorf("larger than %d bytes", secretFileBytesMax)
	}
	return b, nil
}

// RealPath is path made absolute with its symbolic links followed.
//
//determinism:production the file system
func (osSecrets) RealPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil // a path that does not exist (yet) is judged as written
}

// MapSecrets is a SecretSource over fixed values, for tests and the simulator: Env by name,
// Files by path.
type MapSecrets struct {
	Env   map[string]string
	Files map[string]string
}

func (m MapSecrets) LookupEnv(name string) (string, bool) { v, ok := m.Env[name]; return v, ok }

func (m MapSecrets) ReadFile(path string) ([]byte, error) {
	if v, ok := m.Files[path]; ok {
		return []byte(v), nil
	}
	return nil, os.ErrNotExist
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// HasSecretRef reports whether s contains a ${env:...} or ${file:...} reference.
func HasSecretRef(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, "$${", ""), "${env:") ||
		strings.Contains(strings.ReplaceAll(s, "$${", ""), "${file:")
}

// ResolveRefs returns s with every reference replaced by its value from src.
func ResolveRefs(s string, src SecretSource) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // "$${": a literal "${"
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated reference (want ${env:NAME} or ${file:PATH}; write $${ for a literal ${)")
		}
		v, err := lookupRef(s[i+2:i+end], src)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func lookupRef(ref string, src SecretSource) (string, error) {
	kind, arg, _ := strings.Cut(ref, ":")
	if g, ok := src.(refGate); ok {
		if err := g.refuse(kind, arg); err != nil {
			return "", err
		}
	}
	switch kind {
	case "env":
		if !envNamePattern.MatchString(arg) {
			return "", fmt.Errorf("${env:%s}: not an environment variable name", arg)
		}
		v, ok := src.LookupEnv(arg)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", arg)
		}
		return v, nil
	case "file":
		if arg == "" {
			return "", fmt.Errorf("${file:}: no path")
		}
		b, err := src.ReadFile(arg)
		if err != nil {
			return "", fmt.Errorf("secret file %s: %s", arg, fileErrReason(err))
		}
		v := strings.TrimSuffix(string(b), "\n")
		return strings.TrimSuffix(v, "\r"), nil
	}
	return "", fmt.Errorf("${%s:...}: unknown reference kind %q (want env or file; write $${ for a literal ${)", kind, kind)
}

// fileErrReason is why a file could not be read, without repeating its path.
func fileErrReason(err error) string {
	switch {
	case os.IsNotExist(err):
		return "does not exist"
	case os.IsPermission(err):
		return "permission denied"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ResolveLocalSecrets replaces the references of the node-local section (queryflux:): the admin
// token, the worker API and control plane secrets, the database URL, the config key and the
// worker's own cluster credentials.
func ResolveLocalSecrets(cfg *Config, src SecretSource) error {
	r := resolver{src: src}
	q := &cfg.QueryFlux
	r.secret("queryflux.adminApi.token", &q.AdminAPI.Token)
	r.secret("queryflux.workerApi.secret", &q.WorkerAPI.Secret)
	r.secret("queryflux.controlPlane.secret", &q.ControlPlane.Secret)
	r.secret("queryflux.persistence.databaseUrl", &q.Persistence.DatabaseURL)
	r.secret("queryflux.persistence.configKey", &q.Persistence.ConfigKey)
	for _, name := range sortedKeys(q.ClusterCredentials) {
		c := q.ClusterCredentials[name]
		r.credentials(key("queryflux.clusterCredentials", name), &c)
		q.ClusterCredentials[name] = c
	}
	return r.err()
}

// ResolveSharedSecrets replaces the references of the shared sections: cluster credentials,
// endpoints and options (variants included) and users' password hashes.
func ResolveSharedSecrets(cfg *Config, src SecretSource) error {
	r := resolver{src: src}
	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		p := index("clusters", i)
		r.credentials(p+".credentials", &c.Credentials)
		r.endpoint(p+".endpoint", &c.Endpoint)
		r.options(p+".options", c.Options)
		for _, name := range sortedKeys(c.Variants) {
			v := c.Variants[name]
			vp := key(p+".variants", name)
			if v.Credentials != nil {
				creds := *v.Credentials
				r.credentials(vp+".credentials", &creds)
				v.Credentials = &creds
			}
			if v.Endpoint != nil {
				ep := *v.Endpoint
				r.endpoint(vp+".endpoint", &ep)
				v.Endpoint = &ep
			}
			r.options(vp+".options", v.Options)
			c.Variants[name] = v
		}
	}
	for i := range cfg.Settings.Security.Users {
		r.str(index("settings.security.users", i)+".passwordHash", &cfg.Settings.Security.Users[i].PasswordHash)
	}
	return r.err()
}

// ResolveSecrets replaces every reference of cfg, loaded from file ("" for none): the node-local
// section's from src, the shared sections' from src bounded by that section's policy
// (SharedSecretSource), which it returns for the shared sections the node resolves later
// (reloads, admin edits and checks).
func ResolveSecrets(cfg *Config, src SecretSource, file string) (SecretSource, error) {
	bounded := SharedSecretSource(cfg.QueryFlux, file, src)
	local := ResolveLocalSecrets(cfg, src)
	shared := ResolveSharedSecrets(cfg, bounded)
	var errs Errors
	for _, err := range []error{local, shared} {
		var e Errors
		if errors.As(err, &e) {
			errs = append(errs, e...)
		}
	}
	if len(errs) > 0 {
		return bounded, errs
	}
	return bounded, nil
}

// resolver collects one error per field that does not resolve.
type resolver struct {
	src  SecretSource
	errs Errors
}

func (r *resolver) str(path string, s *string) {
	v, err := ResolveRefs(*s, r.src)
	if err != nil {
		r.errs = append(r.errs, FieldError{Path: path, Message: err.Error()})
		return
	}
	*s = v
}

func (r *resolver) secret(path string, s *Secret) {
	v := string(*s)
	r.str(path, &v)
	*s = Secret(v)
}

func (r *resolver) credentials(path string, c *Credentials) {
	r.secret(path+".password", &c.Password)
	r.secret(path+".token", &c.Token)
}

// endpoint resolves references written as the password of an endpoint URL only
// ("postgres://app:${env:PG_PASSWORD}@db/app"): endpoints are shown (with the password hidden),
// so a reference anywhere else would show what it names.
func (r *resolver) endpoint(path string, e *string) {
	if HasSecretRef(RedactURL(*e)) {
		r.errs = append(r.errs, FieldError{Path: path, Message: "a ${env:...} or ${file:...} reference is accepted only as the password of an endpoint URL (scheme://user:${env:NAME}@host/...)"})
		return
	}
	r.str(path, e)
}

// options resolves references in credential options only (IsSecretOption), the ones never shown.
func (r *resolver) options(path string, opts map[string]string) {
	for _, k := range sortedKeys(opts) {
		v := opts[k]
		if !IsSecretOption(k) && HasSecretRef(v) {
			r.errs = append(r.errs, FieldError{Path: key(path, k), Message: "a ${env:...} or ${file:...} reference is accepted only in a credential option (a name with password, secret, token, key, credential or auth)"})
			continue
		}
		r.str(key(path, k), &v)
		opts[k] = v
	}
}

func (r *resolver) err() error {
	if len(r.errs) == 0 {
		return nil
	}
	return r.errs
}
