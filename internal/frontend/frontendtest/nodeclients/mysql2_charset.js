// Drives node mysql2 logged in with a collation (MYSQL_CHARSET: LATIN1_SWEDISH_CI,
// UTF8_GENERAL_CI, UTF8MB4_UNICODE_CI, ...) against a MySQL-protocol server (MYSQL_HOST,
// MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB) and prints one JSON line per probe: the
// session's character set variables, text written and read back in latin1 and utf8mb4 columns
// by text and prepared statement, in and out of a transaction ("tx ..." probes), with each
// column's charset and length as mysql2 reads them.
const mysql = require('mysql2/promise');

function fieldsOf(fields) {
  return (fields || []).map((f) => ({ name: f.name, charset: f.characterSet, length: f.columnLength, type: f.columnType }));
}

const rowsFields = ([rows, f]) => [rows, fieldsOf(f)];
const text = 'h\u00e9llo \u00ff';
const charset = process.env.MYSQL_CHARSET.toLowerCase().split('_')[0]; // latin1, utf8, utf8mb4

const probes = [
  ['variables', (c) => c.query('select @@character_set_client as cl, @@character_set_results as re, @@collation_connection as co').then(rowsFields)],
  ['create', (c) => c.query('create table cs_l (id int primary key, v varchar(20)) default charset=latin1').then(() => c.query('create table cs_u (id int primary key, v varchar(20)) default charset=utf8mb4')).then(() => 'ok')],
  ['insert text', (c) => c.query('insert into cs_l values (1, ?)', [text]).then(() => c.query('insert into cs_u values (1, ?)', [text])).then(([r]) => r.affectedRows)],
  ['insert prepared', (c) => c.execute('insert into cs_l values (?, ?)', [2, text + '2']).then(() => c.execute('insert into cs_u values (?, ?)', [2, text + '2'])).then(([r]) => r.affectedRows)],
  ['select text', (c) => c.query('select l.v, hex(l.v) as lh, u.v as uv, hex(u.v) as uh from cs_l l join cs_u u using (id) order by id').then(rowsFields)],
  ['select prepared', (c) => c.execute('select l.v, hex(l.v) as lh, u.v as uv, hex(u.v) as uh from cs_l l join cs_u u using (id) where l.v like ? order by id', ['h\u00e9%']).then(rowsFields)],
  ['literal', (c) => c.query("select 'caf\u00e9' as lit, hex('caf\u00e9') as h, upper('\u00e9t\u00e9') as u").then(rowsFields)],
  ['tx select', (c) => c.query('begin').then(() => c.query('select v, hex(v) as h from cs_l where v like ? order by id', ['h\u00e9%'])).then((r) => c.query('commit').then(() => rowsFields(r)))],
  ['tx insert', (c) => c.query('begin').then(() => c.execute('insert into cs_l values (?, ?)', [3, '\u00e0 bient\u00f4t'])).then(() => c.query('select v, hex(v) as h from cs_l where id = 3')).then((r) => c.query('commit').then(() => rowsFields(r)))],
  ['after tx', (c) => c.query('select v, hex(v) as h from cs_l where id = 3').then(rowsFields)],
  // The connection's collation compares literals: utf8mb4_unicode_ci has 'ß' = 'ss', _bin no case.
  ['compare', (c) => c.query("select 'a' = 'A' as ci, '\u00df' = 'ss' as sz, 'e' = '\u00e9' as acc, strcmp('b', 'A') as cmp").then(rowsFields)],
  ['compare prepared', (c) => c.execute("select ? = 'A' as ci, ? = 'ss' as sz", ['a', '\u00df']).then(rowsFields)],
  // SET NAMES to the login's set's _bin collation, to another set, and back to its own: mysql2
  // follows the session tracking of character_set_client in the SET's OK to encode what it
  // sends next (the proxy's OK had none: mysql2 went on in its login's set).
  ['set names bin', (c) => c.query(`set names ${charset} collate ${charset}_bin`).then(() => c.query("select @@collation_connection as co, 'a' = 'A' as ci, hex('\u00e9') as h")).then(rowsFields)],
  ['set names other', (c) => c.query(`set names ${charset === 'latin1' ? 'utf8mb4' : 'latin1'}`)
    .then(() => c.query('insert into cs_u values (10, ?)', [text]))
    .then(() => c.query("select v, hex(v) as h, @@character_set_client as cl, hex('\u00e9') as lh from cs_u where id = 10")).then(rowsFields)],
  ['set names back', (c) => c.query(`set names ${charset} collate ${process.env.MYSQL_CHARSET.toLowerCase()}`).then(() => c.query("select @@collation_connection as co, 'a' = 'A' as ci")).then(rowsFields)],
];

(async () => {
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB || undefined,
    charset: process.env.MYSQL_CHARSET,
  });
  await conn.query('drop table if exists cs_l, cs_u');
  for (const [name, fn] of probes) {
    try {
      console.log(JSON.stringify({ probe: name, ok: await fn(conn) }));
    } catch (e) {
      console.log(JSON.stringify({ probe: name, error: { errno: e.errno, sqlState: e.sqlState, message: e.message } }));
    }
  }
  await conn.end();
})().catch((e) => { console.error(e); process.exit(1); });
