package duckengine

import (
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// A MySQL client's foreign keys with ON DELETE CASCADE, SET NULL or SET DEFAULT (Sequelize's
// associations, TypeORM's onDelete, Knex's and Laravel's cascadeOnDelete): CREATE TABLE records
// the actions (mysqlfkchecks.go), and a DELETE of a row such a key references is performed as a
// PostgreSQL client's is (pgcascade.go outside a transaction, pgrefintx.go in one), on the
// statement as DuckDB runs it. A key without an action still refuses: 1451, as MariaDB's.

// actionsClient is the client request the actions' paths read: a MySQL client's statement as
// DuckDB runs it (sqlText, PostgreSQL's syntax), else client itself.
func actionsClient(client *query.Request, sqlText string) *query.Request {
	if !isMySQL(client) {
		return client
	}
	return &query.Request{SQL: sqlText, Protocol: query.ProtocolPostgres}
}

// withActionsOf reports whether client's statements take the actions' paths.
func withActionsOf(client *query.Request) bool {
	return client.Protocol == query.ProtocolPostgres || isMySQL(client)
}

// mysqlActionError is an actions' path's refusal (a key without an action references a row
// the statement deletes) as MariaDB answers a MySQL client: 1451.
func mysqlActionError(client *query.Request, err error) error {
	if qe, ok := err.(*query.Error); ok && isMySQL(client) && qe.Code == sqlstate.ForeignKeyViolation {
		return errParentRowInUse
	}
	return parentRowInUse(client, err)
}
