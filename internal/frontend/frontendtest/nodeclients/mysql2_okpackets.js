// What a node mysql2 user sees of the OK packets and result sets of statements that change
// rows, stacked statements and stored procedures (MYSQL_HOST, MYSQL_PORT, MYSQL_USER,
// MYSQL_PASSWORD, MYSQL_DB): affectedRows, insertId, info, changedRows, warningStatus and
// serverStatus of each OK, the rows of each result set, by text and prepared statement (the
// binary protocol), outside and inside a transaction. One JSON line per probe, as
// mysql2_probe.js prints them.
const mysql = require('mysql2/promise');

// ok is what mysql2 tells of one OK packet, or of one result set (its rows).
function ok(r) {
  if (Array.isArray(r)) return r.map((x) => (Array.isArray(x) ? x : ok(x)));
  return { affectedRows: r.affectedRows, insertId: r.insertId, info: r.info, changedRows: r.changedRows, warningStatus: r.warningStatus, serverStatus: r.serverStatus };
}

// result is mysql2's answer of one statement: an OK, a result set's rows, or several of these
// (stacked statements, CALL), each result set's rows as arrays.
const result = ([r]) => ok(r);

async function probe(conn, name, fn) {
  try {
    console.log(JSON.stringify({ probe: name, ok: await fn(conn) }));
  } catch (e) {
    console.log(JSON.stringify({ probe: name, error: { errno: e.errno, sqlState: e.sqlState, code: e.code, message: e.message } }));
  }
}

// The same changes, run by text or prepared (run(c, sql, params)).
function changes(prefix, run) {
  return [
    [`${prefix} insert generated`, (c) => run(c, 'insert into ok_t (v) values (?), (?)', [1, 2])],
    [`${prefix} insert explicit`, (c) => run(c, 'insert into ok_t (id, v) values (?, ?)', [100, 3])],
    [`${prefix} update changing`, (c) => run(c, 'update ok_t set v = v + ? where id <= ?', [10, 2])],
    [`${prefix} update changing none`, (c) => run(c, 'update ok_t set v = v where id > ?', [0])],
    [`${prefix} update matching none`, (c) => run(c, 'update ok_t set v = ? where id < ?', [5, 0])],
    [`${prefix} insert ignore warning`, (c) => run(c, 'insert ignore into ok_t (id, v) values (?, ?), (?, ?)', [100, 4, 200, 5])],
    [`${prefix} upsert`, (c) => run(c, 'insert into ok_t (id, v) values (?, ?) on duplicate key update v = v + 1', [100, 6])],
    [`${prefix} replace`, (c) => run(c, 'replace into ok_t (id, v) values (?, ?)', [200, 7])],
    [`${prefix} truncating warning`, (c) => run(c, 'update ok_t set s = ? where id = ?', ['far too long for the column', 100])],
    [`${prefix} delete`, (c) => run(c, 'delete from ok_t where id >= ?', [100])],
    [`${prefix} call`, (c) => run(c, 'call ok_q(?)', [20])],
    [`${prefix} call changing`, (c) => run(c, 'call ok_change(?)', [1])],
  ];
}

const text = (c, sql, params) => c.query(sql, params).then(result);
const prepared = (c, sql, params) => c.execute(sql, params).then(result);
const inTransaction = (c, sql, params) => c.query('begin').then(() => c.query(sql, params)).then(async (r) => {
  await c.query('commit');
  return result(r);
});

const probes = [
  ['create', (c) => c.query('create table ok_t (id int auto_increment primary key, v int, s varchar(8))').then(result)],
  ['create procedure', (c) => c.query('create procedure ok_p(in a int, out b int) begin select a as x; select a + 1 as y, \'z\' as z; set b = a * 2; end').then(result)],
  ['create procedure without out', (c) => c.query('create procedure ok_q(in a int) begin select a as x; select a + 1 as y, \'z\' as z; end').then(result)],
  ['create procedure changing', (c) => c.query('create procedure ok_change(in a int) begin update ok_t set v = v + a; end').then(result)],
  ...changes('text', text),
  ...changes('prepared', prepared),
  ...changes('in a transaction', inTransaction),
  ['call out parameter prepared', (c) => c.execute('call ok_p(?, ?)', [5, null]).then(result)],
  ['stacked', (c) => c.query("insert into ok_t (v) values (1); update ok_t set v = 2 where v = 1; select count(*) as n from ok_t; delete from ok_t where v = 2").then(result)],
  ['stacked in a transaction', (c) => c.query('begin; insert into ok_t (v) values (9); select v from ok_t where v = 9; commit').then(result)],
  ['stacked call', (c) => c.query('call ok_q(3); select 4 as o').then(result)],
  ['stacked error', (c) => c.query('select 1 as one; select * from ok_no_such_table; select 2 as two').then(result)],
  ['after stacked error', (c) => c.query('select 3 as three').then(result)],
  ['begin', (c) => c.query('begin').then(result)],
  ['status in a transaction', (c) => c.query('insert into ok_t (v) values (8)').then(result)],
  ['commit', (c) => c.query('commit').then(result)],
  // Last: a user variable holds the session's engine connection from here on (its statements
  // take the Arrow path).
  ['call out text', (c) => c.query('call ok_p(20, @ok_out)').then(result)],
  ['call out text read', (c) => c.query('select @ok_out as o').then(result)],
  ['call out prepared', (c) => c.execute('call ok_p(?, @ok_out)', [30]).then(result)],
  ['call out prepared read', (c) => c.query('select @ok_out as o').then(result)],
  ['call out in a transaction', (c) => c.query('begin').then(() => c.execute('call ok_p(?, @ok_out)', [40])).then(async (r) => {
    await c.query('commit');
    return result(r);
  })],
  ['call out in a transaction read', (c) => c.query('select @ok_out as o').then(result)],
  // A prepared SET of user variables, read by text and by a prepared statement.
  ['prepared set', (c) => c.execute('set @ok_p = ?, @ok_q = ?', [5, 'x']).then(result)],
  ['prepared set read', (c) => c.query('select @ok_p as p, @ok_q as q').then(result)],
  ['prepared set read prepared', (c) => c.execute('select @ok_p + ? as p', [1]).then(result)],
];

// Without CLIENT_MULTI_RESULTS (and CLIENT_PS_MULTI_RESULTS), a CALL of a procedure that
// selects is refused (1312); one that does not runs.
const withoutMultiResults = [
  ['create', (c) => c.query('create table ok_t (id int auto_increment primary key, v int)').then(result)],
  ['create procedure', (c) => c.query('create procedure ok_q(in a int) begin select a as x; end').then(result)],
  ['create procedure changing', (c) => c.query('create procedure ok_change(in a int) begin insert into ok_t (v) values (a); end').then(result)],
  ['text call', (c) => c.query('call ok_q(1)').then(result)],
  ['prepared call', (c) => c.execute('call ok_q(?)', [1]).then(result)],
  ['text call changing', (c) => c.query('call ok_change(1)').then(result)],
  ['prepared call changing', (c) => c.execute('call ok_change(?)', [2]).then(result)],
  ['in a transaction call', (c) => c.query('begin').then(() => c.query('call ok_q(1)')).then(async (r) => {
    await c.query('commit');
    return result(r);
  })],
];

(async () => {
  const without = process.env.WITHOUT_MULTI_RESULTS === '1';
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB || undefined,
    supportBigNumbers: true, bigNumberStrings: true, multipleStatements: true, rowsAsArray: true,
    flags: without ? ['-MULTI_RESULTS', '-PS_MULTI_RESULTS'] : [],
  });
  for (const [name, fn] of without ? withoutMultiResults : probes) {
    await probe(conn, name, fn);
  }
  await conn.end();
})().catch((e) => { console.error(e); process.exit(1); });
