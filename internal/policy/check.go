package policy

import (
	"errors"
	"fmt"
	"slices"

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
// rules, a query no rule matches is denied.
func (c *Compiled) access(req *query.Request, group string) error {
	if len(c.rules) == 0 {
		return nil
	}
	roles := c.users[req.User].Roles
	for _, r := range c.rules {
		if !matchesUser(r, req.User, roles) || !matchesList(r.Groups, group) || !matchesCatalog(r.Catalogs, req.Database) {
			continue
		}
		if r.Effect == config.EffectDeny {
			return denied(req, group)
		}
		return nil
	}
	return denied(req, group)
}

func denied(req *query.Request, group string) error {
	msg := fmt.Sprintf("access denied: user %q may not query group %q", req.User, group)
	if req.Database != "" {
		msg = fmt.Sprintf("access denied: user %q may not query group %q (catalog %q)", req.User, group, req.Database)
	}
	return &query.Error{Code: query.CodeAccessDenied, Message: msg}
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

// matchesCatalog: a rule naming catalogs matches only queries that name one of them.
func matchesCatalog(list []string, catalog string) bool {
	if len(list) == 0 || slices.Contains(list, "*") {
		return true
	}
	return catalog != "" && slices.Contains(list, catalog)
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
