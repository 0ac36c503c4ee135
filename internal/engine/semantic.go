package engine

import "github.com/apache/arrow-go/v18/arrow"

// MetaMySQLType is the MySQL column type a MySQL engine names ("json", ...).
const MetaMySQLType = "queryflux.mysql_type"

// IsUUIDField says whether f holds UUIDs: 16 bytes an engine names uuid (PostgreSQL's uuid,
// DuckDB's UUID), or Arrow's uuid extension type.
func IsUUIDField(f arrow.Field) bool {
	if ext, ok := f.Type.(arrow.ExtensionType); ok {
		return ext.ExtensionName() == "arrow.uuid"
	}
	ft, ok := f.Type.(*arrow.FixedSizeBinaryType)
	return ok && ft.ByteWidth == 16 && (meta(f, MetaPGType) == "uuid" || meta(f, MetaDuckDBType) == "UUID")
}

// IsJSONField says whether f is text an engine names JSON (PostgreSQL's json and jsonb,
// DuckDB's JSON, MySQL's JSON).
func IsJSONField(f arrow.Field) bool {
	switch f.Type.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
	default:
		return false
	}
	switch meta(f, MetaPGType) {
	case "json", "jsonb":
		return true
	}
	return meta(f, MetaDuckDBType) == "JSON" || meta(f, MetaMySQLType) == "json"
}

func meta(f arrow.Field, key string) string {
	v, _ := f.Metadata.GetValue(key)
	return v
}

// IsTimeTZField says whether f is a time of day with a zone offset (PostgreSQL's timetz,
// DuckDB's TIME WITH TIME ZONE), which engines hand over as text.
func IsTimeTZField(f arrow.Field) bool {
	switch meta(f, MetaDuckDBType) {
	case "TIME WITH TIME ZONE", "TIMETZ":
		return true
	}
	return meta(f, MetaPGOID) == pgTimetzOID // pgx names no timetz type
}

const pgTimetzOID = "1266"
