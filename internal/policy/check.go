package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/policy/starhost"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// CodeTranslation is the SQLSTATE of a query a translation script could not translate while
// translation.errorOnUnsupported is on (feature_not_supported).
const CodeTranslation = sqlstate.FeatureNotSupported

// Check is the proxy core's Options.Check: after routing and before cache and queue it decides
// access (settings.accessControl), runs the guard scripts, and rewrites req.SQL with the
// translation scripts of the routed group. Errors are *query.Error.
func (c *Compiled) Check(req *query.Request, group string) error {
	if len(c.rules) == 0 && len(c.guards) == 0 && len(c.translate) == 0 {
		return nil // nothing to decide, run or rewrite: every statement of most nodes, without three calls
	}
	if err := c.access(req, group); err != nil {
		return err
	}
	if err := c.guard(req, group); err != nil {
		return err
	}
	return c.translateSQL(req, group)
}

// access applies the first rule matching the user (by name or role), the group and the catalog
// (req.Database, where the protocol names one). With no rules everything is allowed; with
// rules, a query no rule matches is denied. On a MySQL engine, where a statement reaches any
// database by naming it, every database the statement names is a catalog the rules must allow
// too (mysqlCatalogsNamed), when a rule lists catalogs.
func (c *Compiled) access(req *query.Request, group string) error {
	if len(c.rules) == 0 {
		return nil
	}
	if err := c.accessTo(req, group, req.Database, false); err != nil {
		return err
	}
	if !c.rulesListCatalogs() || c.groupEngine[group] != "mysql" {
		return nil
	}
	for _, catalog := range mysqlCatalogsNamed(req.SQL) {
		if catalog == req.Database {
			continue
		}
		if err := c.accessTo(req, group, catalog, true); err != nil {
			return err
		}
	}
	return nil
}

// accessTo applies the first rule matching the user, the group and catalog; named is true for a
// catalog the statement names (a deny rule then matches it in any letter case, as a server with
// lower_case_table_names reads it).
//
// The denial names the catalog (query.Error's Catalog) when the catalog decided it: a rule for
// the user and group lists catalogs, so another catalog could have been allowed. A user no rule
// lets query the group at all is refused without one.
func (c *Compiled) accessTo(req *query.Request, group, catalog string, named bool) error {
	roles := c.users[req.User].Roles
	byCatalog := false // a rule for the user and group lists catalogs
	for _, r := range c.rules {
		if !matchesUser(r, req.User, roles) || !matchesList(r.Groups, group) {
			continue
		}
		listsCatalogs := len(r.Catalogs) > 0 && !slices.Contains(r.Catalogs, "*")
		byCatalog = byCatalog || listsCatalogs
		coversAll := catalog == catalogAll && named && r.Effect == config.EffectDeny && len(r.Catalogs) > 0
		if !coversAll && !matchesCatalogAs(r.Catalogs, catalog, named && r.Effect == config.EffectDeny) {
			continue
		}
		if r.Effect == config.EffectDeny {
			return deniedCatalog(req, group, catalog, listsCatalogs)
		}
		return nil
	}
	return deniedCatalog(req, group, catalog, byCatalog)
}

// rulesListCatalogs reports whether some rule is limited to listed catalogs.
func (c *Compiled) rulesListCatalogs() bool {
	for _, r := range c.rules {
		if len(r.Catalogs) > 0 && !slices.Contains(r.Catalogs, "*") {
			return true
		}
	}
	return false
}

// deniedCatalog is the denial of req; byCatalog: the catalog decided it (Catalog is set).
func deniedCatalog(req *query.Request, group, catalog string, byCatalog bool) error {
	msg := fmt.Sprintf("access denied: user %q may not query group %q", req.User, group)
	if catalog != "" {
		msg = fmt.Sprintf("access denied: user %q may not query group %q (catalog %q)", req.User, group, catalog)
	}
	e := &query.Error{Code: query.CodeAccessDenied, Message: msg}
	if byCatalog {
		e.Catalog = catalog
	}
	return e
}

func matchesUser(r config.AccessRule, user string, roles []string) bool {
	if slices.Contains(r.Users, "*") || slices.Contains(r.Users, user) || slices.Contains(r.Roles, "*") {
		return true
	}
	for _, role := range roles {
		if slices.Contains(r.Roles, role) {
			return true
		}
	}
	return false
}

func matchesList(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, "*") || slices.Contains(list, v)
}

// matchesCatalogAs: a rule naming catalogs matches only queries that name one of them, in any
// letter case when folded.
func matchesCatalogAs(list []string, catalog string, folded bool) bool {
	if len(list) == 0 || slices.Contains(list, "*") {
		return true
	}
	if catalog == "" {
		return false
	}
	for _, c := range list {
		if c == catalog || folded && strings.EqualFold(c, catalog) {
			return true
		}
	}
	return false
}

// guard runs every guard script of the group: def guard(query, ctx) returning None or True
// (allow), False (deny) or a string (deny, with that reason). A guard that fails (an error, the
// step limit) denies: a guard that cannot decide must not let a query through.
func (c *Compiled) guard(req *query.Request, group string) error {
	if len(c.guards) == 0 {
		return nil
	}
	q := starhost.RequestValue(req)
	ctx := c.context(req, group)
	for _, s := range c.guards {
		if !s.appliesTo(group) {
			continue
		}
		v, err := s.prog.Call(q, ctx)
		if err != nil {
			return &query.Error{Code: query.CodeAccessDenied, Message: "guard failed: " + err.Error()}
		}
		switch v := v.(type) {
		case starlark.NoneType:
		case starlark.Bool:
			if !v {
				return &query.Error{Code: query.CodeAccessDenied, Message: "denied by guard script " + s.prog.Name}
			}
		case starlark.String:
			return &query.Error{Code: query.CodeAccessDenied, Message: "denied: " + string(v)}
		default:
			return &query.Error{Code: query.CodeAccessDenied, Message: fmt.Sprintf("guard failed: script %s returned %s, want None, a bool or a reason string", s.prog.Name, v.Type())}
		}
	}
	return nil
}

func (c *Compiled) context(req *query.Request, group string) *starlark.Dict {
	d := starlark.NewDict(4)
	_ = d.SetKey(starlark.String("group"), starlark.String(group))
	_ = d.SetKey(starlark.String("engine"), starlark.String(c.groupEngine[group]))
	_ = d.SetKey(starlark.String("roles"), starhost.Strings(c.users[req.User].Roles))
	d.Freeze()
	return d
}

// errUnsupported is a script's "cannot translate" (it returned None).
var errUnsupported = errors.New("returned None (cannot translate)")

// translateSQL pipes req.SQL through the group's translation scripts in order: def
// transform(sql, src, dst) returning the new SQL, or None when it cannot translate. src is the
// client's protocol, dst the group's engine kind. When a script fails or returns None the
// query is rejected (errorOnUnsupported) or passes through untranslated.
func (c *Compiled) translateSQL(req *query.Request, group string) error {
	sql := req.SQL
	for _, s := range c.translate {
		if !s.appliesTo(group) {
			continue
		}
		out, err := s.transform(sql, req.Protocol, c.groupEngine[group])
		if err != nil {
			if c.strict {
				return &query.Error{Code: CodeTranslation, Message: "translation failed: " + err.Error()}
			}
			return nil // the failure policy: pass the original SQL through unchanged
		}
		sql = out
	}
	req.SQL = sql
	return nil
}

func (s script) transform(sql, src, dst string) (string, error) {
	v, err := s.prog.Call(starlark.String(sql), starlark.String(src), starlark.String(dst))
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case starlark.String:
		return string(v), nil
	case starlark.NoneType:
		return "", fmt.Errorf("script %s: %w", s.prog.Name, errUnsupported)
	default:
		return "", fmt.Errorf("script %s: transform returned %s, want a string or None", s.prog.Name, v.Type())
	}
}
