package flightsql

import (
	"context"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

// Foreign keys (GetImportedKeys, GetExportedKeys, GetCrossReference: JDBC's getImportedKeys
// and kin) come from information_schema as the primary keys do. Each row is one column pair:
// the referenced (pk_) and the referencing (fk_) table's catalog, schema, table and column,
// the pair's place in the key, both constraints' names and the update and delete rules.
const (
	// foreignKeysMySQLSQL: MySQL calls every table's primary key PRIMARY, so the standard
	// join below would pair a key with every table's; it names the referenced columns on
	// key_column_usage itself.
	foreignKeysMySQLSQL = `SELECT kcu.table_catalog, kcu.referenced_table_schema, kcu.referenced_table_name, kcu.referenced_column_name,
 kcu.table_catalog, kcu.table_schema, kcu.table_name, kcu.column_name, kcu.ordinal_position,
 kcu.constraint_name, rc.unique_constraint_name, rc.update_rule, rc.delete_rule
FROM information_schema.key_column_usage kcu
JOIN information_schema.referential_constraints rc ON rc.constraint_schema = kcu.constraint_schema
 AND rc.constraint_name = kcu.constraint_name AND rc.table_name = kcu.table_name
WHERE kcu.referenced_table_name IS NOT NULL`
	// foreignKeysSQL is the SQL standard's way, for engines without MySQL's columns.
	foreignKeysSQL = `SELECT pk.table_catalog, pk.table_schema, pk.table_name, pk.column_name,
 fk.table_catalog, fk.table_schema, fk.table_name, fk.column_name, fk.ordinal_position,
 rc.constraint_name, rc.unique_constraint_name, rc.update_rule, rc.delete_rule
FROM information_schema.referential_constraints rc
JOIN information_schema.key_column_usage fk ON fk.constraint_schema = rc.constraint_schema
 AND fk.constraint_name = rc.constraint_name
JOIN information_schema.key_column_usage pk ON pk.constraint_schema = rc.unique_constraint_schema
 AND pk.constraint_name = rc.unique_constraint_name AND pk.ordinal_position = fk.position_in_unique_constraint`
)

// foreignKeys reads every foreign key column pair: MySQL's way first, since the standard
// query runs on MySQL too, wrongly; the engines without its columns refuse it.
func (s *Server) foreignKeys(ctx context.Context) ([][]string, error) {
	rows, err := s.stringRows(ctx, foreignKeysMySQLSQL, 13)
	if err == nil {
		return rows, nil
	}
	return s.stringRows(ctx, foreignKeysSQL, 13)
}

// tableIs reports whether catalog, schema and table (columns at from) are the table ref names.
func tableIs(ref fsql.TableRef, r []string, from int) bool {
	return catalogMatches(ref.Catalog, r[from]) && catalogMatches(ref.DBSchema, r[from+1]) && r[from+2] == ref.Table
}

// keysAnswer streams the foreign key rows keep selects, ordered as Flight SQL says: by the
// referenced side (pkSide: GetImportedKeys, GetCrossReference) or the referencing side
// (GetExportedKeys), then by each key's sequence. SQL promises no order of its own.
func (s *Server) keysAnswer(ctx context.Context, keep func([]string) bool, pkSide bool) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.foreignKeys(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out [][]string
	for _, r := range rows {
		if keep(r) {
			out = append(out, r)
		}
	}
	order := foreignKeyOf
	if pkSide {
		order = referencedKeyOf
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ki, kj := order(out[i]), order(out[j]); ki != kj {
			return ki < kj
		}
		return keySequence(out[i][8]) < keySequence(out[j][8])
	})
	schema := schema_ref.ImportedExportedKeysAndCrossReference
	b := array.NewRecordBuilder(s.Alloc, schema)
	defer b.Release()
	for _, r := range out {
		for c := range 8 {
			b.Field(c).(*array.StringBuilder).Append(r[c])
		}
		b.Field(8).(*array.Int32Builder).Append(keySequence(r[8]))
		b.Field(9).(*array.StringBuilder).Append(r[9])
		b.Field(10).(*array.StringBuilder).Append(r[10])
		b.Field(11).(*array.Uint8Builder).Append(keyRule(r[11]))
		b.Field(12).(*array.Uint8Builder).Append(keyRule(r[12]))
	}
	return singleBatch(schema, b.NewRecordBatch())
}

// foreignKeyOf names the key a row's column pair belongs to from the referencing side: its
// table and the constraint (GetExportedKeys' order).
func foreignKeyOf(r []string) string {
	return strings.Join([]string{r[4], r[5], r[6], r[9]}, "\x00")
}

// referencedKeyOf names it from the referenced side: the referenced table and key, then the
// constraint (on MySQL every referenced primary key is named PRIMARY: two keys to one table
// must not interleave). GetImportedKeys' and GetCrossReference's order.
func referencedKeyOf(r []string) string {
	return strings.Join([]string{r[0], r[1], r[2], r[10], r[4], r[5], r[6], r[9]}, "\x00")
}

// keyRule is Flight SQL's number for an update or delete rule (its UpdateDeleteRules).
func keyRule(rule string) uint8 {
	switch strings.ToUpper(rule) {
	case "CASCADE":
		return 0
	case "RESTRICT":
		return 1
	case "SET NULL":
		return 2
	case "SET DEFAULT":
		return 4
	}
	return 3 // NO ACTION, and what an engine leaves unsaid
}

func (s *Server) GetFlightInfoImportedKeys(_ context.Context, _ fsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.ImportedKeys), nil
}

// DoGetImportedKeys lists the keys the table references (it is the fk_ side).
func (s *Server) DoGetImportedKeys(ctx context.Context, ref fsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.keysAnswer(ctx, func(r []string) bool { return tableIs(ref, r, 4) }, true)
}

func (s *Server) GetFlightInfoExportedKeys(_ context.Context, _ fsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.ExportedKeys), nil
}

// DoGetExportedKeys lists the keys that reference the table (it is the pk_ side).
func (s *Server) DoGetExportedKeys(ctx context.Context, ref fsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.keysAnswer(ctx, func(r []string) bool { return tableIs(ref, r, 0) }, false)
}

func (s *Server) GetFlightInfoCrossReference(_ context.Context, _ fsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.CrossReference), nil
}

// DoGetCrossReference lists the keys by which one table references the other.
func (s *Server) DoGetCrossReference(ctx context.Context, ref fsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.keysAnswer(ctx, func(r []string) bool { return tableIs(ref.PKRef, r, 0) && tableIs(ref.FKRef, r, 4) }, true)
}
