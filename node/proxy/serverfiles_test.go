package proxy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestServerFilesAndProgramsRefused: each way a statement reaches the engine host's files or
// programs through the shared engine user is refused in every protocol (also in a block's
// body, in text that runs, with escapes); statements that only mention the words, COPY to the
// client and COPY to a file (left to the engine's grants) pass.
func TestServerFilesAndProgramsRefused(t *testing.T) {
	refused := []string{
		"COPY (select 1) TO PROGRAM 'id'", "copy t from program 'cat /etc/passwd'", "/* c */ COPY t TO\nPROGRAM 'id'",
		"select pg_read_file('/etc/passwd')", "SELECT PG_CATALOG.PG_READ_BINARY_FILE('/etc/passwd')",
		"select lo_import('/etc/passwd')", "select lo_export(1, '/tmp/x')", "select * from pg_ls_dir('.')",
		`select "pg_read_file"('/etc/passwd')`, "select pg_stat_file('postgresql.conf')",
		"do $$ begin copy t to program 'id'; end $$", "do $$ begin execute 'copy t to program ''id'''; end $$",
		`do E'begin perform pg\x5fread_file(''/etc/passwd''); end'`,
		"select query_to_xml('copy t to program ''id''', true, true, '')",
		"SELECT LOAD_FILE('/etc/passwd')", "select * from t into outfile '/tmp/x'", "SELECT 1 INTO DUMPFILE '/tmp/x'",
		"LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "load data low_priority infile '/etc/passwd' into table t",
		"LOAD XML INFILE '/etc/x.xml' INTO TABLE t", "EXECUTE IMMEDIATE 'SELECT LOAD_FILE(''/etc/passwd'')'",
		"/*!SELECT LOAD_FILE('/etc/passwd')*/",
	}
	allowed := []string{
		"select * from program", "select infile, outfile, program from t", "insert into notes values ('pg_read_file')",
		"select 'load_file', 'copy t to program' from t", "copy t to stdout", "copy t from stdin",
		"COPY t TO '/tmp/x.csv'", "LOAD DATA LOCAL INFILE 'x.csv' INTO TABLE t",
	}
	for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		for _, sql := range refused {
			if checkServerFiles(&query.Request{SQL: sql, Protocol: protocol}) == nil {
				t.Errorf("%s: %q passed, want refused", protocol, sql)
			}
		}
		for _, sql := range allowed {
			if err := checkServerFiles(&query.Request{SQL: sql, Protocol: protocol}); err != nil {
				t.Errorf("%s: %q refused: %v", protocol, sql, err)
			}
		}
	}
}
