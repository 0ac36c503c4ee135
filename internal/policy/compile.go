package policy

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/policy/starhost"
)

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
// timing tells a client which names exist, nor which form most users' hashes have.
type unknownUsers struct {
	decoy      string // a configured user's hash of the most common kind and cost: checked, then refused
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
	kinds, shapes := map[string]int{}, map[string]int{}
	h := sha256.New()
	h.Write([]byte("queryflux unknown users\x00"))
	for _, u := range sorted {
		kinds[HashKind(u.PasswordHash)]++
		shapes[hashShape(u.PasswordHash)]++
		h.Write([]byte(u.Name + "\x00" + u.PasswordHash + "\x00"))
	}
	// The kind decides the exchange a client sees (SCRAM or a cleartext password), the shape
	// its salt, iteration count and cost: the most common kind, then within it the most
	// common shape (ties to the first name).
	var decoy string
	for _, u := range sorted {
		k, d := HashKind(u.PasswordHash), HashKind(decoy)
		if decoy == "" || kinds[k] > kinds[d] || (k == d && shapes[hashShape(u.PasswordHash)] > shapes[hashShape(decoy)]) {
			decoy = u.PasswordHash
		}
	}
	out := unknownUsers{decoy: decoy, secret: h.Sum(nil)}
	if v, err := parseSCRAM(decoy); err == nil {
		out.scram, out.saltLen, out.iterations = true, len(v.salt), v.iterations
	}
	return out
}

// hashShape is what a hash shows of itself through a login besides its kind: a SCRAM
// verifier's salt length and iteration count, a bcrypt hash's cost.
func hashShape(hash string) string {
	switch HashKind(hash) {
	case HashSCRAM:
		if v, err := parseSCRAM(hash); err == nil {
			return fmt.Sprintf("scram/%d/%d", v.iterations, len(v.salt))
		}
	case HashBcrypt:
		if cost, err := bcrypt.Cost([]byte(hash)); err == nil {
			return fmt.Sprintf("bcrypt/%d", cost)
		}
	}
	return HashKind(hash)
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
	progs, e := config.CompileTranslationScripts(cfg)
	tr := scriptsOf(progs, cfg.Translation.Scripts)
	errs = append(errs, e...)
	if cfg.Translation.Mode == config.TranslationScripts {
		c.translate = tr
	}
	progs, e = config.CompileGuardScripts(cfg)
	c.guards = scriptsOf(progs, cfg.Settings.GuardScripts)
	errs = append(errs, e...)
	return c, errs
}

// scriptsOf pairs each compiled program with its script's groups (a script that failed to
// compile is left out: a configuration with one is refused as a whole).
func scriptsOf(progs []*starhost.Program, scripts []config.Script) []script {
	var out []script
	for i, prog := range progs {
		if prog != nil {
			out = append(out, script{prog: prog, groups: scripts[i].Groups})
		}
	}
	return out
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
