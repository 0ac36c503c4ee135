package pgengine_test

import "testing"

// TestMySQLIndexesOnPostgreSQL: SHOW INDEX, information_schema.STATISTICS and SHOW COLUMNS'
// Key of a PostgreSQL table, as MariaDB answers for the same table (mysqlwire's
// TestIndexesAndColumnKeysOnPostgreSQLAsOnMariaDB compares them with MariaDB's): InnoDB's
// order of keys, the KEY of a foreign key no index covers, MUL, and the PRI of the first
// unique key of NOT NULL columns in a table without a primary key.
func TestMySQLIndexesOnPostgreSQL(t *testing.T) {
	e := open(t)
	for _, ddl := range []string{
		"CREATE TABLE p (id INT PRIMARY KEY)",
		"CREATE TABLE k (a INT, b INT NOT NULL, c INT NOT NULL, d INT REFERENCES p (id), UNIQUE (c, b), UNIQUE (a))",
		"CREATE INDEX k_b ON k (b)",
	} {
		if _, _, err := mysqlRows(t, e, "", ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	for _, c := range []struct{ stmt, want string }{
		{"SHOW INDEX FROM k", "k,0,c,1,c,A,0,(null),(null),,BTREE,,,NO|k,0,c,2,b,A,0,(null),(null),,BTREE,,,NO|" +
			"k,0,a,1,a,A,0,(null),(null),YES,BTREE,,,NO|k,1,d,1,d,A,0,(null),(null),YES,BTREE,,,NO|k,1,k_b,1,b,A,0,(null),(null),,BTREE,,,NO"},
		{"SHOW KEYS FROM k WHERE Non_unique = 0 AND Seq_in_index = 2", "k,0,c,2,b,A,0,(null),(null),,BTREE,,,NO"},
		{"SHOW COLUMNS FROM k", "a,int(11),YES,UNI,(null),|b,int(11),NO,PRI,(null),|c,int(11),NO,PRI,(null),|d,int(11),YES,MUL,(null),"},
		{"SELECT index_name, seq_in_index, column_name, non_unique FROM information_schema.STATISTICS s " +
			"WHERE TABLE_NAME = 'k' ORDER BY s.seq_in_index DESC, 1", "c,2,b,0|a,1,a,0|c,1,c,0|d,1,d,1|k_b,1,b,1"},
	} {
		_, g, err := mysqlJoined(t, e, "", c.stmt)
		if err != nil {
			t.Errorf("%s: %v", c.stmt, err)
			continue
		}
		if g != c.want {
			t.Errorf("%s:\n %q\nwant\n %q", c.stmt, g, c.want)
		}
	}
}
