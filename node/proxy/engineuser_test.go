package proxy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestEngineUserChangesRefused: what would change the engine user every client shares (its
// password, its defaults, its grants, its name) or every session's defaults is refused in every
// protocol, named as the engine names it, in text that runs and behind escapes; managing other
// roles and users, and statements that only look alike, pass.
func TestEngineUserChangesRefused(t *testing.T) {
	users := []string{"qf_engine", "root"}
	refused := []string{
		"ALTER ROLE CURRENT_USER SET statement_timeout = '1ms'",
		"alter user current_user password 'x'",
		"ALTER ROLE session_user RESET ALL",
		"alter role current_role with password 'x'",
		"ALTER ROLE qf_engine PASSWORD 'x'",
		`ALTER ROLE "qf_engine" SET search_path = evil`,
		"alter role QF_ENGINE valid until '2000-01-01'",
		"ALTER ROLE ALL SET statement_timeout = 1",
		"alter role qf_engine rename to someone",
		"ALTER ROLE CURRENT_USER IN DATABASE app SET default_transaction_read_only = on",
		"ALTER DATABASE app SET default_transaction_read_only = on",
		"alter database app reset all",
		"ALTER DATABASE app WITH ALLOW_CONNECTIONS false",
		"alter database app connection limit 0",
		"ALTER SYSTEM SET log_statement = 'all'",
		"REVOKE ALL ON SCHEMA public FROM current_user",
		"revoke connect on database app from qf_engine",
		"DROP USER qf_engine",
		"drop role if exists app, qf_engine",
		"ALTER USER 'root'@'%' IDENTIFIED BY 'x'",
		"alter user current_user() identified by 'x'",
		"ALTER USER USER() IDENTIFIED BY 'x'",
		"RENAME USER 'app'@'%' TO 'a2'@'%', root@localhost TO r2@localhost",
		"DROP USER `root`@`%`",
		"REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'root'@'%'",
		"SET PASSWORD = PASSWORD('x')",
		"set password = 'x'",
		"SET PASSWORD FOR CURRENT_USER() = PASSWORD('x')",
		"SET PASSWORD FOR 'root'@'localhost' = 'x'",
		"SET GLOBAL max_statement_time = 0.001",
		"set @@global.read_only = 1",
		"SET @@GLOBAL.init_connect = 'DO SLEEP(100)'",
		"SET sql_mode = '', GLOBAL max_connections = 1",
		"SET PERSIST max_connections = 1",
		"SHUTDOWN",
		"/* c */ shutdown",
		"do $$ begin execute 'alter role current_user set statement_timeout = 1'; end $$",
		"do $$ begin alter role current_user password 'x'; end $$",
		"EXECUTE IMMEDIATE 'SET GLOBAL max_connections = 1'",
		"PREPARE s FROM 'SHUTDOWN'",
		"BEGIN NOT ATOMIC SET GLOBAL max_connections = 1; END",
		"/*! SET GLOBAL max_connections = 1 */",
		"EXECUTE IMMEDIATE 'ALTER USER CURRENT_USER() IDENTIFIED BY ''x'''",
		`do E'begin alter role current\x5fuser set statement_timeout = 1; end'`,
		"EXECUTE IMMEDIATE X'53485554444f574e'", // SHUTDOWN
		`alter role U&"qf!005fengine" UESCAPE '!' password 'x'`,
		"select 1; alter role current_user reset all", // a simple-protocol batch
		"SELECT 1; SET PASSWORD = 'x'",                // CLIENT_MULTI_STATEMENTS
	}
	allowed := []string{
		"CREATE ROLE app LOGIN PASSWORD 'x'",
		"ALTER ROLE app PASSWORD 'x'",
		"alter role app set search_path = app",
		"ALTER USER 'app'@'%' IDENTIFIED BY 'x'",
		"SET PASSWORD FOR 'app'@'%' = PASSWORD('x')",
		"DROP ROLE app",
		"REVOKE SELECT ON t FROM app",
		"ALTER DATABASE app CHARACTER SET utf8mb4",
		"ALTER DATABASE CHARACTER SET = utf8mb4 COLLATE utf8mb4_bin",
		"alter database app rename to app2",
		"ALTER TABLE t DROP COLUMN password",
		"SET statement_timeout = 1000",
		"SET SESSION sql_mode = ''",
		"select @@global.max_connections",
		"UPDATE settings SET global = 1",
		"SELECT password FROM users WHERE name = 'root'",
		"INSERT INTO notes VALUES ('SET GLOBAL x = 1')",
		"select current_user",
		"ALTER TABLE t RENAME TO u",
		"DROP TABLE shutdown_log",
	}
	protocols := []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL}
	for _, protocol := range protocols {
		for _, sql := range refused {
			if err := checkSharedEngineUserAs(&query.Request{SQL: sql, Protocol: protocol}, users); err == nil {
				t.Errorf("%s: %q passed, want refused", protocol, sql)
			} else if qe, ok := err.(*query.Error); !ok || qe.Code != query.CodeAccessDenied {
				t.Errorf("%s: %q: %v, want access denied", protocol, sql, err)
			}
		}
		for _, sql := range allowed {
			if err := checkSharedEngineUserAs(&query.Request{SQL: sql, Protocol: protocol}, users); err != nil {
				t.Errorf("%s: %q refused: %v", protocol, sql, err)
			}
		}
	}
}
