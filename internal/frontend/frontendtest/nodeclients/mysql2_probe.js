// Drives node mysql2 against a MySQL-protocol server (MYSQL_HOST, MYSQL_PORT, MYSQL_USER,
// MYSQL_PASSWORD, MYSQL_DB) and prints one JSON line per probe: what a mysql2 user sees of
// prepared statements (binary protocol), types, warnings, stacked statements and errors.
// PROBES picks the probe set: "mariadb" or "duckdb". MYSQL_SSL_CA, when set, connects over TLS,
// verifying the server's certificate (and that it names the host) against that CA.
const fs = require('fs');
const mysql = require('mysql2/promise');

function show(v) {
  if (Buffer.isBuffer(v)) return { buffer: v.toString('hex') };
  if (v instanceof Date) return { date: isNaN(v) ? 'Invalid' : v.toISOString() };
  return v;
}

function rowsOf(rows) {
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, show(v)])));
}

function fieldsOf(fields) {
  // typeName and format: MariaDB's extended metadata (absent without it).
  return (fields || []).map((f) => ({ name: f.name, type: f.columnType, charset: f.characterSet, flags: f.flags, length: f.columnLength, decimals: f.decimals,
    typeName: f.extendedTypeName, format: f.extendedFormat }));
}

async function probe(conn, name, fn) {
  try {
    console.log(JSON.stringify({ probe: name, ok: await fn(conn) }));
  } catch (e) {
    console.log(JSON.stringify({ probe: name, error: { errno: e.errno, sqlState: e.sqlState, code: e.code } }));
  }
}

const mariadb = [
  ['create', (c) => c.query('create table t (id int primary key, dt datetime, d decimal(10,2), j json, b blob, bt bit(3), u bigint unsigned, tm time(3), s varchar(20))').then(() => 'ok')],
  ['insert date param', (c) => c.execute('insert into t (id, dt) values (?, ?)', [1, new Date(Date.UTC(2024, 0, 2, 3, 4, 5))]).then(([r]) => [r.affectedRows, r.warningStatus])],
  ['insert typed params', (c) => c.execute('insert into t (id, d, j, b, bt, u, tm, s) values (?, ?, ?, ?, ?, ?, ?, ?)', [2, '12.34', '{"a": [1, 2]}', Buffer.from([0, 1, 255]), Buffer.from([5]), '18446744073709551615', '-838:59:59.5', 'héllo']).then(([r]) => r.affectedRows)],
  ['insert null params', (c) => c.execute('insert into t (id, dt, s) values (?, ?, ?)', [3, null, null]).then(([r]) => r.affectedRows)],
  ['zero dates binary', (c) => c.execute("select cast('2024-00-00' as date) as d, cast('0000-00-00 00:00:00' as datetime) as z, ? as p", [1]).then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['zero dates text', (c) => c.query("select cast('2024-00-00' as date) as d, cast('0000-00-00 00:00:00' as datetime) as z").then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['select binary', (c) => c.execute('select * from t where id >= ? order by id', [1]).then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['select text', (c) => c.query('select * from t order by id').then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['mariadb types create', (c) => c.query('create table mt (id int primary key, j json, u uuid, i6 inet6, i4 inet4, g point)').then(() => 'ok')],
  ['mariadb types insert', (c) => c.query(`insert into mt values (1, '{"a": [1, {"b": null}]}', '123e4567-e89b-12d3-a456-426614174000', '::1', '10.0.0.1', point(1, 2))`).then(([r]) => r.affectedRows)],
  ['mariadb types text', (c) => c.query('select id, j, u, i6, i4, g, json_object(\'k\', id) as jo, json_extract(j, \'$.a\') as je from mt').then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['mariadb types binary', (c) => c.execute('select id, j, u, i6, i4, g, json_object(\'k\', id) as jo from mt where id = ?', [1]).then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['mariadb types in a transaction', (c) => c.query('begin').then(() => c.query('select j, u from mt')).then(([rows, f]) => c.query('commit').then(() => [rowsOf(rows), fieldsOf(f)]))],
  ['reexecute', (c) => c.execute('select ? + 1 as n', [41]).then(() => c.execute('select ? + 1 as n', [1.5])).then(([rows]) => rowsOf(rows))],
  ['warnings', (c) => c.query("insert ignore into t (id, s) values (10, 'this string is far too long for twenty')").then(([r]) => r.warningStatus).then((n) => c.query('show warnings').then(([rows]) => [n, rowsOf(rows)]))],
  ['warnings of rows', (c) => c.query("select cast('abc' as signed) as n").then(([rows]) => rowsOf(rows)).then((r) => c.query('show warnings').then(([rows]) => [r, rowsOf(rows)]))],
  ['warnings of prepared', (c) => c.execute("select cast(? as signed) as n", ['12x']).then(([rows]) => rowsOf(rows)).then((r) => c.query('show warnings').then(([rows]) => [r, rowsOf(rows)]))],
  ['warnings cleared', (c) => c.query('select 1').then(() => c.query('show warnings')).then(([rows]) => rowsOf(rows))],
  ['error in show warnings', (c) => c.query('select * from no_such_table').catch(() => c.query('show warnings')).then(([rows]) => rowsOf(rows).map((r) => [r.Level, r.Code]))],
  ['stacked without flag', (c) => c.query('select 1; create table inj_probe (x int)').then(() => 'ran')],
  ['stacked probe table absent', (c) => c.query("select count(*) as n from information_schema.tables where table_schema = database() and table_name = 'inj_probe'").then(([rows]) => rowsOf(rows))],
  ['no such table', (c) => c.query('select * from no_such_table')],
  ['no such table prepared', (c) => c.execute('select * from no_such_table where 1 = ?', [1])],
  ['syntax', (c) => c.query('selec 1')],
  // The TLS version of the connection the statement ran on ("" without TLS).
  ['tls', (c) => c.query("select variable_value as v from information_schema.session_status where variable_name = 'Ssl_version'").then(([rows]) => rowsOf(rows))],
];

const duckdb = [
  ['create', (c) => c.query('create table t (id integer primary key, dt timestamp, d decimal(10,2), j json, u uuid, b blob)').then(() => 'ok')],
  ['insert date param', (c) => c.execute('insert into t (id, dt) values (?, ?)', [1, new Date(Date.UTC(2024, 0, 2, 3, 4, 5))]).then(([r]) => r.affectedRows)],
  ['insert typed params', (c) => c.execute('insert into t (id, d, j, u, b) values (?, ?, ?, ?, ?)', [2, '12.34', '{"a": [1, 2]}', '123e4567-e89b-12d3-a456-426614174000', Buffer.from([0, 1, 255])]).then(([r]) => r.affectedRows)],
  ['select binary', (c) => c.execute('select * from t where id >= ? order by id desc', [1]).then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['select text', (c) => c.query('select * from t order by id desc').then(([rows, f]) => [rowsOf(rows), fieldsOf(f)])],
  ['params decoded', (c) => c.execute('select ? as i, ? as f, ? as s, ? as n', [-5, 2.5, 'x', null]).then(([rows]) => rowsOf(rows))],
  ['stacked without flag', (c) => c.query('select 1; create table inj_probe (x int)').then(() => 'ran')],
  ['stacked probe table absent', (c) => c.query("select count(*) as n from information_schema.tables where table_name = 'inj_probe'").then(([rows]) => rowsOf(rows))],
  ['no such table', (c) => c.query('select * from no_such_table')],
  ['no such table prepared', (c) => c.execute('select * from no_such_table where 1 = ?', [1])],
  ['syntax', (c) => c.query('selec 1')],
];

(async () => {
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB || undefined,
    dateStrings: true, jsonStrings: process.env.JSON_STRINGS === '1', supportBigNumbers: true, bigNumberStrings: true, multipleStatements: false, timezone: 'Z',
    ssl: process.env.MYSQL_SSL_CA ? { ca: fs.readFileSync(process.env.MYSQL_SSL_CA), rejectUnauthorized: true } : undefined,
  });
  for (const [name, fn] of process.env.PROBES === 'duckdb' ? duckdb : mariadb) {
    await probe(conn, name, fn);
  }
  await conn.end();
})().catch((e) => { console.error(e); process.exit(1); });
