package duckengine

import (
	"strconv"
	"strings"
)

// A catalog row's tableoid: the oid of the catalog relation it is a row of, which pg_dump
// reads of every catalog it lists (with a row's oid it names the object in pg_depend and
// pg_description) and psql's \dd of pg_constraint, pg_opclass, pg_rewrite, ...; DuckDB's
// relations have no such column. [alias.]tableoid is written as PostgreSQL's oid of the
// catalog relation the alias (or, unqualified, the statement's first catalog relation in a
// FROM) names.

// catalogOids are PostgreSQL's oids of its catalog relations.
var catalogOids = map[string]int{
	"pg_class": 1259, "pg_namespace": 2615, "pg_proc": 1255, "pg_type": 1247, "pg_attrdef": 2604,
	"pg_constraint": 2606, "pg_extension": 3079, "pg_collation": 3456, "pg_conversion": 2607, "pg_cast": 2605,
	"pg_operator": 2617, "pg_am": 2601, "pg_language": 2612, "pg_ts_config": 3602, "pg_ts_dict": 3600,
	"pg_ts_parser": 3601, "pg_ts_template": 3764, "pg_opclass": 2616, "pg_opfamily": 2753,
	"pg_foreign_data_wrapper": 2328, "pg_foreign_server": 1417, "pg_default_acl": 826, "pg_event_trigger": 3466,
	"pg_rewrite": 2618, "pg_policy": 3256, "pg_trigger": 2620, "pg_publication": 6104, "pg_subscription": 6100,
	"pg_statistic_ext": 3381, "pg_transform": 3576, "pg_largeobject_metadata": 2995, "pg_database": 1262,
	"pg_publication_rel": 6106, "pg_publication_namespace": 6237, "pg_authid": 1260,
}

// tableoid writes [alias.]tableoid at w.i as its catalog relation's oid; false for any other
// token, or a tableoid of a relation not known here.
func (w *compatWriter) tableoid() bool {
	if w.word(w.sig(w.i+1, 0)) == "(" || w.word(w.prevSig(w.i)) == "as" { // a function; a column's alias
		return false
	}
	start := w.nameStart(w.i)
	rel := w.catalogRelation("")
	if start != w.i {
		rel = w.catalogRelation(w.word(start))
	}
	oid, ok := catalogOids[rel]
	if !ok {
		return false
	}
	if start != w.i {
		if _, ok := w.retract(start); !ok {
			return false
		}
	}
	text := strconv.Itoa(oid) + "::BIGINT"
	// in a select list, named as PostgreSQL names it (pg_dump reads the column by its name)
	if next := w.word(w.sig(w.i+1, 0)); next == "," || next == "from" || next == "" {
		text += " AS tableoid"
	}
	w.emit(text)
	w.i++
	return true
}

// catalogRelation is the catalog relation alias names in the statement (a FROM item
// "[pg_catalog.]pg_x [AS] alias", or pg_x itself); "" for none. An empty alias: the first
// catalog relation of a FROM or JOIN.
func (w *compatWriter) catalogRelation(alias string) string {
	for i := w.sig(0, 0); i >= 0; i = w.sig(i+1, 0) {
		name := w.word(i)
		if _, ok := catalogOids[name]; !ok {
			continue
		}
		before := w.prevSig(i)
		if w.word(before) == "." && w.word(w.prevSig(before)) == "pg_catalog" {
			before = w.prevSig(w.prevSig(before))
		} else if w.word(before) == "." {
			continue // a column's qualifier
		}
		if !isFromItem(w.word(before)) {
			continue
		}
		if alias == "" || name == alias {
			return name
		}
		next := w.sig(i+1, 0)
		if w.word(next) == "as" {
			next = w.sig(next+1, 0)
		}
		if w.word(next) == alias {
			return name
		}
	}
	return ""
}

// catalogRegclass is PostgreSQL's oid of the catalog relation 'name'::regclass names
// (pg_class or pg_catalog.pg_class: 1259), the oid a catalog row's classid and tableoid say.
func catalogRegclass(name string) (int, bool) {
	name = strings.ToLower(name)
	if rest, ok := strings.CutPrefix(name, "pg_catalog."); ok {
		name = rest
	}
	oid, ok := catalogOids[name]
	return oid, ok
}
