package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// ON UPDATE actions chained: a key whose CASCADE (or SET NULL) changes columns of its table
// that keys of other tables reference with an ON UPDATE action of their own acts on those in
// turn, to maxActionDepth levels, as PostgreSQL's triggers do (A <- B <- C, a natural key
// updated at the top reaches every level). Each level's map (its key's values before and after,
// o0... n0...) is read from the level above's map and its table's rows before any of them
// changes; then every level's table is updated from its map.

// updateNode is a key's ON UPDATE action, the temporary table mapping its referenced values
// before to after, and the actions of the keys that reference the columns it changes.
type updateNode struct {
	a       refAction
	mapName string
	set     string // the UPDATE's SET list over qf_map
	next    []updateNode
}

// updateTree reads acts' chain (named by prefix: acts[i]'s map is prefix_i). path is the
// tables above; a key back to one of them, or a chain deeper than maxActionDepth, is refused.
func (u *refUpdate) updateTree(ctx context.Context, conn *sql.Conn, acts []refAction, path []string, prefix string) ([]updateNode, error) {
	var nodes []updateNode
	for i, a := range acts {
		key := strings.ToLower(cmp.Or(a.schema, "main") + "." + a.table)
		if slices.Contains(path, key) {
			return nil, u.notPerformed(a, "; its rows are referenced by a key of a table above it")
		}
		if len(path) > maxActionDepth {
			return nil, u.notPerformed(a, fmt.Sprintf("; the actions chain deeper than %d tables", maxActionDepth))
		}
		n := updateNode{a: a, mapName: fmt.Sprintf("%s_%d", prefix, i)}
		var next []string
		for j, c := range a.columns {
			next = append(next, fmt.Sprintf("%s = qf_map.n%d", quoteIdent(c), j))
		}
		n.set = strings.Join(next, ", ")
		if a.action != 'c' {
			set, err := actionSet(ctx, conn, a)
			if err != nil {
				return nil, err
			}
			n.set = set
		}
		children, err := referencingActions(ctx, conn, a.schema, a.table, "on_update")
		if err != nil {
			return nil, err
		}
		children = slices.DeleteFunc(children, func(c refAction) bool { return !changesAny(a, c.refs) })
		if len(children) > 0 && a.action == 'd' {
			return nil, u.notPerformed(a, "; the columns it sets to their default are referenced in turn")
		}
		if n.next, err = u.updateTree(ctx, conn, children, append(slices.Clip(path), key), n.mapName); err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// changesAny reports whether a's action changes any of cols (its table's).
func changesAny(a refAction, cols []string) bool {
	return slices.ContainsFunc(cols, func(c string) bool {
		return slices.ContainsFunc(a.columns, func(k string) bool { return strings.EqualFold(k, c) })
	})
}

// childMap is the statement creating c's map (a child of n) from n's map and n's table's rows
// (copyOf), before n's UPDATE: each row of n's table its action reaches, the values c's key
// references before and after.
func childMap(n, c updateNode, copyOf func(schema, table string) string) step {
	var match, cols, changed []string
	for j, col := range n.a.columns {
		match = append(match, fmt.Sprintf("qf_t.%s = qf_map.o%d", quoteIdent(col), j))
	}
	for j, ref := range c.a.refs {
		before := "qf_t." + quoteIdent(ref)
		after := before
		if k := slices.IndexFunc(n.a.columns, func(col string) bool { return strings.EqualFold(col, ref) }); k >= 0 {
			after = fmt.Sprintf("qf_map.n%d", k)
			if n.a.action == 'n' {
				after = "NULL"
			}
		}
		cols = append(cols, fmt.Sprintf("%s AS o%d, %s AS n%d", before, j, after, j))
		changed = append(changed, fmt.Sprintf("o%d IS DISTINCT FROM n%d", j, j))
	}
	return step{"CREATE OR REPLACE TEMPORARY TABLE " + strings.TrimPrefix(c.mapName, "temp.main.") + " AS SELECT DISTINCT * FROM (SELECT " +
		strings.Join(cols, ", ") + " FROM " + copyOf(n.a.schema, n.a.table) + " AS qf_t JOIN " + n.mapName + " AS qf_map ON " +
		strings.Join(match, " AND ") + ") WHERE " + strings.Join(changed, " OR "), false}
}

// chainSteps are the steps on the copies of tree's levels below the first: every child's map
// (read before any UPDATE), then every level's UPDATE from its map.
func chainSteps(tree []updateNode, copyOf func(schema, table string) string) []step {
	var maps, updates []step
	var walk func(ns []updateNode)
	walk = func(ns []updateNode) {
		for _, n := range ns {
			for _, c := range n.next {
				maps = append(maps, childMap(n, c, copyOf))
			}
			var match []string
			for j, c := range n.a.columns {
				match = append(match, fmt.Sprintf("qf_map.o%d = qf_ref.%s", j, quoteIdent(c)))
			}
			updates = append(updates, step{"UPDATE " + copyOf(n.a.schema, n.a.table) + " AS qf_ref SET " + n.set + " FROM " + n.mapName +
				" AS qf_map WHERE " + strings.Join(match, " AND "), false})
			walk(n.next)
		}
	}
	walk(tree)
	return append(maps, updates...)
}

// mapNames are every map of tree.
func mapNames(tree []updateNode) []string {
	var out []string
	for _, n := range tree {
		out = append(append(out, n.mapName), mapNames(n.next)...)
	}
	return out
}
