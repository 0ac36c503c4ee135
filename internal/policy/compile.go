package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/policy/starhost"
)

func init() {
	// config.Compile (and so `queryflux config check`, the control plane's PUT and every
	// worker's activation) rejects a configuration whose scripts do not compile, naming each.
	config.RegisterCompiler("policy.scripts", func(cfg *config.Config) []config.FieldError {
		_, errs := compile(cfg)
		return errs
	})
}

// Compiled is one configuration's policy: users, access rules and scripts. Immutable.
type Compiled struct {
	users       map[string]config.User
	rules       []config.AccessRule
	guards      []script
	translate   []script // empty unless translation.mode is scripts
	strict      bool     // translation.errorOnUnsupported
	groupEngine map[string]string

	trustLoopback  bool // settings.security: see Admit
	requireTLS     bool
	allowPlaintext bool
}

// script is a compiled translation or guard script and the groups it applies to (all when empty).
type script struct {
	prog   *starhost.Program
	groups []string
}

func (s script) appliesTo(group string) bool {
	return len(s.groups) == 0 || slices.Contains(s.groups, group)
}

// Compile builds cfg's policy. Errors are config.Errors naming each bad script's path
// ("translation.scripts[1].source: ...").
func Compile(cfg *config.Config) (*Compiled, error) {
	c, errs := compile(cfg)
	if len(errs) > 0 {
		return nil, config.Errors(errs)
	}
	return c, nil
}

func compile(cfg *config.Config) (*Compiled, []config.FieldError) {
	c := &Compiled{
		users:       map[string]config.User{},
		rules:       cfg.Settings.AccessControl.Rules,
		strict:      cfg.Translation.ErrorOnUnsupported,
		groupEngine: groupEngines(cfg),

		trustLoopback:  cfg.Settings.Security.TrustLoopback,
		requireTLS:     cfg.Settings.Security.RequireTLS,
		allowPlaintext: cfg.Settings.Security.AllowPlaintextPasswords,
	}
	for _, u := range cfg.Settings.Security.Users {
		c.users[u.Name] = u
	}
	var errs []config.FieldError
	// Translation scripts compile even while mode is off, so switching the mode on later cannot
	// activate a broken script.
	tr, e := compileScripts("translation.scripts", cfg.Translation.Scripts, "transform", 3)
	errs = append(errs, e...)
	if cfg.Translation.Mode == config.TranslationScripts {
		c.translate = tr
	}
	c.guards, e = compileScripts("settings.guardScripts", cfg.Settings.GuardScripts, "guard", 2)
	errs = append(errs, e...)
	return c, errs
}

func compileScripts(path string, scripts []config.Script, fn string, params int) ([]script, []config.FieldError) {
	var out []script
	var errs []config.FieldError
	for i, s := range scripts {
		p := fmt.Sprintf("%s[%d]", path, i)
		prog, err := starhost.Compile(fmt.Sprintf("%s (%s)", p, s.Name), s.Source, fn, 1, params)
		if err != nil {
			errs = append(errs, config.FieldError{Path: p + ".source", Message: err.Error()})
			continue
		}
		out = append(out, script{prog: prog, groups: s.Groups})
	}
	return out, errs
}

// groupEngines maps each group to the engine kind of its first member: the dialect
// translation scripts translate to.
func groupEngines(cfg *config.Config) map[string]string {
	kinds := map[string]string{}
	for _, cl := range cfg.Clusters {
		kinds[cl.Name] = cl.Engine
	}
	out := map[string]string{}
	for _, g := range cfg.ClusterGroups {
		if len(g.Members) > 0 {
			base, _, _ := strings.Cut(g.Members[0], "::")
			out[g.Name] = kinds[base]
		}
	}
	return out
}
