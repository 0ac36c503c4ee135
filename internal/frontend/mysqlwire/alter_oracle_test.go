package mysqlwire

import "testing"

// TestMySQLDropTablesOnDuckDBLikeMariaDB: DROP TABLE of several tables, on one connection to
// MariaDB and one through the proxy to DuckDB: each dropped in the order named, one refused (a
// table another's foreign key references: 1451) or missing leaving the others dropped; the
// missing ones are one 1051 naming them all, a view 1965; with IF EXISTS notes instead (SHOW
// WARNINGS, the OK's warning count). DuckDB refused every DROP TABLE of two names (1235 "Can
// only drop one object at a time") and named a referenced table 1146.
func TestMySQLDropTablesOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	const tables = "select table_name from information_schema.tables where table_schema = database() order by table_name"
	compareSteps(t, conns[0], conns[1], []string{
		"exec create table p1 (id int primary key)",
		"exec create table c1 (id int primary key, p int, foreign key (p) references p1 (id))",
		"exec create table x1 (id int)",
		"exec create table x2 (id int)",
		"exec create view v1 as select * from x2",
		"exec drop table p1, c1",
		tables,
		"exec create table c1 (id int primary key, p int, foreign key (p) references p1 (id))",
		"exec drop table p1, nothere",
		"exec drop table p1",
		tables,
		"exec drop table x1, nothere, nothere2",
		"show warnings",
		tables,
		"exec drop table nothere, v1",
		"exec drop table v1",
		"exec drop table if exists c1, nothere, p1, nothere2",
		"show warnings",
		tables,
		"exec drop table if exists v1, nothere",
		"show warnings",
		"exec drop table if exists nothere",
		"show warnings",
		"exec drop table if exists x2",
		"show warnings",
		"exec drop view v1",
		tables,
	})
}

// TestMySQLAddedKeysOnDuckDBLikeMariaDB: keys added to a table after it was created compare
// text without regard to case, as a CREATE TABLE's do (utf8mb4_general_ci): ALTER TABLE ADD
// UNIQUE (unnamed: named by its column), ADD UNIQUE KEY name, ADD CONSTRAINT c UNIQUE (two
// columns), ADD PRIMARY KEY, CREATE UNIQUE INDEX, ADD COLUMN ... UNIQUE; 'A' after 'a' is 1062
// on both, and a key dropped no longer refuses it. DuckDB took both rows (and refused ADD
// COLUMN with UNIQUE, 1064).
func TestMySQLAddedKeysOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	compareSteps(t, maria, duck, []string{
		"exec create table u1 (id int, s varchar(10), t varchar(10))",
		"exec alter table u1 add unique (s)",
		"exec alter table u1 add unique key uq_t (t)",
		"exec insert into u1 values (1, 'a', 'a')",
		"exec insert into u1 values (2, 'A', 'b')",
		"exec insert into u1 values (3, 'c', 'B')",
		"exec insert into u1 values (4, 'd', 'd')",
		"show index from u1",
		"exec create table u2 (s varchar(10), v int)",
		"exec alter table u2 add primary key (s)",
		"exec insert into u2 values ('x', 1)",
		"exec insert into u2 values ('X', 2)",
		"show index from u2",
		"exec create table u3 (s varchar(10), v int)",
		"exec create unique index u3s on u3 (s)",
		"exec insert into u3 values ('q', 1)",
		"exec insert into u3 values ('Q', 2)",
		"exec drop index u3s on u3",
		"exec insert into u3 values ('Q', 2)",
		"exec create table u4 (s varchar(10), v int)",
		"exec alter table u4 add constraint u4_s_uniq unique (s, v)",
		"exec insert into u4 values ('q', 1), ('Q', 2)",
		"exec insert into u4 values ('Q', 1)",
		"exec alter table u4 drop index u4_s_uniq",
		"exec insert into u4 values ('Q', 1)",
		"exec create table u5 (id int primary key, s varchar(10))",
		"exec insert into u5 values (1, 'a')",
		"exec alter table u5 add column e varchar(20) unique",
		"exec insert into u5 values (2, 'b', 'e')",
		"exec insert into u5 values (3, 'c', 'E')",
		"exec alter table u5 add unique index u5s (s)",
		"exec insert into u5 values (4, 'B', 'f')",
		"show index from u5",
		"select * from u1 order by id",
		"select * from u3 order by v",
		"select * from u4 order by s, v",
		"select * from u5 order by id",
	})
}

// TestMySQLAlterChangeOnDuckDBLikeMariaDB: ALTER TABLE ... CHANGE [COLUMN] old new type [NULL |
// NOT NULL] [DEFAULT v] [FIRST | AFTER c] renames and retypes the column, its index (KEY) and
// its rows kept; the same name keeps it. DuckDB read no CHANGE (1064). The column's place
// (FIRST / AFTER) is not kept on DuckDB: the reads name their columns.
func TestMySQLAlterChangeOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	compareSteps(t, maria, duck, []string{
		"exec create table users (id int auto_increment primary key, name varchar(100) not null, email varchar(100), key by_email (email))",
		"exec insert into users (name, email) values ('Ann', 'a@x.org'), ('Bob', 'b@x.org')",
		"exec alter table users change email mail varchar(120) null",
		"exec alter table users change column mail mail2 varchar(120) not null default '' after id",
		"exec alter table users change name name varchar(200) first",
		"exec insert into users (name) values ('Cy')",
		"exec insert into users (name, mail2) values (null, 'x')",
		"select id, name, mail2 from users order by id",
		"show index from users",
		"select column_name, is_nullable, column_default from information_schema.columns where table_name = 'users' and column_name = 'mail2'",
		"exec alter table users change nothere x int",
	})
}

// TestMySQLAlterReferencedTableOnDuckDBLikeMariaDB: MODIFY, CHANGE and ADD COLUMN of a table
// other tables' foreign keys reference (directly and through a table that references it),
// as Django's auth migrations run them (MODIFY auth_user's varchar(150) to varchar(254), a
// column made NULL): each runs, the rows stay, the keys still refuse an orphan (1452), and a
// key column renamed by CHANGE is the one the keys reference. A column dropped from before a
// foreign key's column (Django's RemoveField) goes, with its index; DuckDB refused ("an index
// depends on a column after it").
// DuckDB refused every one of them ("Cannot alter entry ... because there are entries that
// depend on it", 1105).
func TestMySQLAlterReferencedTableOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	compareSteps(t, maria, duck, []string{
		"exec create table au (id int auto_increment primary key, name varchar(30) not null, seen datetime not null, key by_name (name))",
		"exec create table ag (id int auto_increment primary key, user_id int not null, g varchar(10), unique key (user_id, g), foreign key (user_id) references au (id))",
		"exec create table agp (id int primary key, ag_id int, foreign key (ag_id) references ag (id))",
		"exec insert into au (name, seen) values ('ann', '2020-01-01 00:00:00'), ('bob', '2020-01-02 00:00:00')",
		"exec insert into ag (user_id, g) values (1, 'x'), (2, 'y')",
		"exec insert into agp values (1, 1)",
		"exec alter table au modify name varchar(150) not null",
		"exec alter table au modify seen datetime null",
		"exec insert into au (name, seen) values ('cy', null)",
		"exec alter table au add column age int null",
		"exec alter table ag modify g varchar(20) not null",
		"exec alter table au change id uid int not null auto_increment",
		"exec insert into ag (user_id, g) values (9, 'z')",
		"exec insert into agp values (2, 9)",
		"exec insert into ag (user_id, g) values (3, 'z')",
		"exec insert into ag (user_id, g) values (3, 'Z')",
		"select uid, name, seen, age from au order by uid",
		"select * from ag order by id",
		"select * from agp order by id",
		"show index from au",
		"show index from ag",
		"exec create table ap (id int primary key, extra varchar(5), au_id int, key (extra), foreign key (au_id) references au (uid))",
		"exec insert into ap values (1, 'x', 1)",
		"exec alter table ap drop column extra",
		"exec insert into ap values (2, 99)",
		"exec insert into ap values (2, 2)",
		"select * from ap order by id",
	})
}
