package policy

import (
	"crypto/sha256"
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

	unknown unknownUsers
}

// unknownUsers is how a name no user has is refused: with the same steps, and the same
// cost, as a wrong password of a typical configured user, so that neither the answer nor its
// timing tells a client which names exist.
type unknownUsers struct {
	decoy      string // a configured user's hash, of the most common kind: checked, then refused
	scram      bool   // that kind is SCRAM: PostgreSQL clients get a mock exchange
	secret     []byte // of mock verifiers: a digest of every user's hash, secret like them
	saltLen    int    // of the decoy's verifier, so a mock one looks the same
	iterations int
}

func compileUnknown(users []config.User) unknownUsers {
	if len(users) == 0 {
		return unknownUsers{}
	}
	sorted := slices.Clone(users)
	slices.SortFunc(sorted, func(a, b config.User) int { return strings.Compare(a.Name, b.Name) })
	counts := map[string]int{}
	h := sha256.New()
	h.Write([]byte("queryflux unknown users\x00"))
	for _, u := range sorted {
		counts[HashKind(u.PasswordHash)]++
		h.Write([]byte(u.Name + "\x00" + u.PasswordHash + "\x00"))
	}
	var decoy string
	for _, u := range sorted {
		if d := HashKind(decoy); decoy == "" || counts[HashKind(u.PasswordHash)] > counts[d] {
			decoy = u.PasswordHash
		}
	}
	out := unknownUsers{decoy: decoy, secret: h.Sum(nil)}
	if v, err := parseSCRAM(decoy); err == nil {
		out.scram, out.saltLen, out.iterations = true, len(v.salt), v.iterations
	}
	return out
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
	c.unknown = compileUnknown(cfg.Settings.Security.Users)
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
