// A refused write inside a transaction through node mysql2 (MYSQL_HOST, MYSQL_PORT, MYSQL_USER,
// MYSQL_PASSWORD, MYSQL_DB): MariaDB undoes the refused statement only (a duplicate key, a
// foreign key, NOT NULL, CHECK, by text and by prepared statement) and the
// transaction goes on: the application catches the error, writes on and commits. Also with
// autocommit off, and ids (insertId, LAST_INSERT_ID()) given before and after the refusal.
// Prints one JSON line per step: its label and what mysql2 returned, or the error's errno and
// sqlState. The proxy on the embedded DuckDB must print what MariaDB prints.
const mysql = require('mysql2/promise');

function okOf(r) {
  return { affectedRows: r.affectedRows, insertId: r.insertId };
}

async function step(conn, label, fn) {
  let out;
  try {
    out = { ok: await fn(conn) };
  } catch (e) {
    out = { error: { errno: e.errno, sqlState: e.sqlState } };
  }
  console.log(JSON.stringify({ step: label, ...out }));
}

const q = (sql, params) => (c) => c.query(sql, params).then(([r]) => (Array.isArray(r) ? r : okOf(r)));
const x = (sql, params) => (c) => c.execute(sql, params).then(([r]) => (Array.isArray(r) ? r : okOf(r)));

const flow = [
  ['drop tag', q('drop table if exists su_tag')],
  ['drop child', q('drop table if exists su_child')],
  ['drop parent', q('drop table if exists su_parent')],
  ['create parent', q('create table su_parent (id int not null auto_increment primary key, code varchar(5) not null unique, ' +
    'qty int not null default 0, check (qty >= 0))')],
  ['create child', q('create table su_child (id int not null auto_increment primary key, parent_id int not null, note varchar(10), ' +
    'foreign key (parent_id) references su_parent (id))')],
  ['create tag', q('create table su_tag (code varchar(5) primary key, label varchar(10) not null)')],
  ['seed', q("insert into su_parent (code, qty) values ('a', 1)")],
  ['begin', (c) => c.beginTransaction().then(() => 'begun')],
  ['insert b', q("insert into su_parent (code, qty) values ('b', 2)")],
  ['duplicate code', q("insert into su_parent (code, qty) values ('a', 3)")],
  ['insert c prepared', x('insert into su_parent (code, qty) values (?, ?)', ['c', 3])],
  ['duplicate prepared', x('insert into su_parent (code, qty) values (?, ?)', ['c', 4])],
  ['tag', x('insert into su_tag (code, label) values (?, ?)', ['t1', 'one'])],
  ['null label', x('insert into su_tag (code, label) values (?, ?)', ['t2', null])],
  ['tag again', q("insert into su_tag (code, label) values ('t1', 'uno')")],
  ['tag t3', q("insert into su_tag (code, label) values ('t3', 'three')")],
  ['check qty', q("update su_parent set qty = -1 where code = 'b'")],
  ['child of b', q("insert into su_child (parent_id, note) values ((select id from su_parent where code = 'b'), 'kid')")],
  ['child of none', x('insert into su_child (parent_id, note) values (?, ?)', [99, 'orphan'])],
  ['delete b', q("delete from su_parent where code = 'b'")],
  ['last id', q('select last_insert_id() as id')],
  ['update c', q("update su_parent set qty = qty + 10 where code = 'c'")],
  ['insert e', q("insert into su_parent (code, qty) values ('e', 5)")],
  ['in tx', q('select id, code, qty from su_parent order by id')],
  ['commit', (c) => c.commit().then(() => 'committed')],
  ['parents', q('select id, code, qty from su_parent order by id')],
  ['children', q('select parent_id, note from su_child order by id')],
  ['tags', q('select code, label from su_tag order by code')],
  ['autocommit off', q('set autocommit = 0')],
  ['insert f', q("insert into su_parent (code, qty) values ('f', 6)")],
  ['duplicate f', q("insert into su_parent (code, qty) values ('f', 7)")],
  ['update f', q("update su_parent set qty = qty * 2 where code = 'f'")],
  ['rollback', (c) => c.rollback().then(() => 'rolled back')],
  ['insert g', q("insert into su_parent (code, qty) values ('g', 8)")],
  ['orphan g', q("insert into su_child (parent_id, note) values (1000, 'x')")],
  ['child of g', q("insert into su_child (parent_id, note) values ((select id from su_parent where code = 'g'), 'g kid')")],
  ['commit g', (c) => c.commit().then(() => 'committed')],
  ['autocommit on', q('set autocommit = 1')],
  ['parents after', q('select id, code, qty from su_parent order by id')],
  ['children after', q('select parent_id, note from su_child order by id')],
];

(async () => {
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || '', database: process.env.MYSQL_DB,
  });
  for (const [label, fn] of flow) await step(conn, label, fn);
  await conn.end();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
