package pgengine

import (
	"cmp"
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// A MySQL client's result column that is a table's column (RowDescription's table OID and
// attribute number) carries what the table says of it (engine.MetaColumnKey: NOT NULL, its
// keys, an identity or serial), which the MySQL frontend sends as the column's flags, as
// MariaDB does. The catalog is read on another pooled connection while the statement's rows
// wait on theirs, and only on one that is idle or can be opened without waiting: a statement
// never waits for a second connection (every connection held by a statement waiting so would
// be a deadlock), and goes without the flags instead.

// columnKeysSQL reads the MetaColumnKey words of the table columns given as two arrays, the
// relations' OIDs and the attribute numbers. MariaDB's MUL is the first column's of a
// non-unique index or of a unique index of more than one column; a unique index of one column
// is UNI; an identity or a nextval default is AUTO_INCREMENT.
const columnKeysSQL = `SELECT a.attrelid, a.attnum, n.nspname, c.relname, a.attname, concat_ws(' ',
	CASE WHEN a.attnotnull THEN 'not_null' END,
	CASE WHEN bool_or(i.indisprimary) THEN 'primary_key' END,
	CASE WHEN bool_or(i.indisunique AND NOT i.indisprimary AND i.indnkeyatts = 1) THEN 'unique_key' END,
	CASE WHEN NOT coalesce(bool_or(i.indisprimary), false) AND bool_or(i.indkey[0] = a.attnum AND (NOT i.indisunique OR i.indnkeyatts > 1)) THEN 'multiple_key' END,
	CASE WHEN count(i.indexrelid) > 0 THEN 'part_key' END,
	CASE WHEN a.attidentity <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false) THEN 'auto_increment' END,
	CASE WHEN a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' THEN 'no_default' END)
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND a.attnum = ANY(i.indkey[0:i.indnkeyatts - 1])
WHERE (a.attrelid, a.attnum) IN (SELECT * FROM unnest($1::oid[], $2::int2[]))
GROUP BY a.attrelid, a.attnum, n.nspname, c.relname, a.attname, a.attnotnull, a.attidentity, a.atthasdef, d.adbin, d.adrelid`

// columnKeys is each field's MetaColumnKey value, with its origin (an expression's empty); nil
// for a client that is not MySQL's, or when no connection is free to read the catalog.
func (e *Engine) columnKeys(ctx context.Context, q *query.Request, fields []pgconn.FieldDescription) []string {
	if q.Protocol != query.ProtocolMySQL {
		return nil
	}
	var oids []uint32
	var nums []int16
	for _, f := range fields {
		if f.TableOID != 0 {
			oids, nums = append(oids, f.TableOID), append(nums, int16(f.TableAttributeNumber))
		}
	}
	if oids == nil {
		return expressionKeys(q, len(fields))
	}
	conn := e.freeConn(ctx)
	if conn == nil {
		return nil
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, columnKeysSQL, oids, nums)
	if err != nil {
		return nil
	}
	defer rows.Close()
	type column struct {
		oid uint32
		num int16
	}
	byColumn := map[column]string{}
	aliases := fromAliases(q)
	for rows.Next() {
		var c column
		var schema, table, name, key string
		if rows.Scan(&c.oid, &c.num, &schema, &table, &name, &key) != nil {
			return nil
		}
		// RowDescription says no alias: the statement's text does (mysqlnames.go).
		byColumn[c] = engine.WithOrigin(key, engine.ColumnOrigin{DB: schema, Table: cmp.Or(aliases[table], table), OrgTable: table, Column: name})
	}
	if rows.Err() != nil {
		return nil
	}
	keys := expressionKeys(q, len(fields))
	for i, f := range fields {
		if key, ok := byColumn[column{f.TableOID, int16(f.TableAttributeNumber)}]; ok {
			keys[i] = key
		}
	}
	return keys
}

// expressionKeys are n columns' keys when none is a table's: MariaDB names no origin for an
// expression, and a COUNT is NOT NULL (engine.KeyCount).
func expressionKeys(q *query.Request, n int) []string {
	counts := countItems(q, n)
	keys := make([]string, n)
	for i := range keys {
		key := ""
		if counts[i] {
			key = engine.KeyNotNull + " " + engine.KeyCount
		}
		keys[i] = engine.WithOrigin(key, engine.ColumnOrigin{})
	}
	return keys
}

// freeConn is a pooled connection that is idle, or one the pool opens below its limit; nil
// when every connection is in use.
func (e *Engine) freeConn(ctx context.Context) *pgxpool.Conn {
	idle := e.pool.AcquireAllIdle(ctx)
	if len(idle) > 0 {
		for _, c := range idle[1:] {
			c.Release()
		}
		return idle[0]
	}
	if st := e.pool.Stat(); st.TotalConns() >= st.MaxConns() {
		return nil
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil
	}
	return conn
}

// withColumnKeys is schema with each field's key (MetaColumnKey) where it has one.
func withColumnKeys(schema *arrow.Schema, keys []string) *arrow.Schema {
	fields := schema.Fields()
	for i, key := range keys {
		if key == "" {
			continue
		}
		md := fields[i].Metadata
		fields[i].Metadata = arrow.NewMetadata(append(md.Keys(), engine.MetaColumnKey), append(md.Values(), key))
	}
	return arrow.NewSchema(fields, nil)
}
