// An application's day through node mysql2 (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD,
// MYSQL_DB), as its users write it: JSON columns read as objects, UPDATE's affectedRows and
// changedRows (with mysql2's default CLIENT_FOUND_ROWS and without it), TRUNCATE and the
// AUTO_INCREMENT ids after it, a type matrix written by parameters and read back by text and
// by prepared statements, and the errors an application catches (duplicate key, syntax, no
// such table). Prints one JSON line per step: its label and what mysql2 returned, or the error's
// errno, sqlState and code. The proxy on the embedded DuckDB must print what MariaDB prints.
const mysql = require('mysql2/promise');

function show(v) {
  if (Buffer.isBuffer(v)) return { buffer: v.toString('hex') };
  if (v instanceof Date) return { date: isNaN(v) ? 'Invalid' : v.toISOString() };
  return v;
}

function rowsOf(rows) {
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, show(v)])));
}

function okOf(r) {
  return { affectedRows: r.affectedRows, changedRows: r.changedRows, insertId: r.insertId };
}

async function step(conn, label, fn) {
  let out;
  try {
    out = { ok: await fn(conn) };
  } catch (e) {
    out = { error: { errno: e.errno, sqlState: e.sqlState, code: e.code } };
  }
  console.log(JSON.stringify({ step: label, ...out }));
}

const q = (sql, params) => (c) => c.query(sql, params).then(([r]) => (Array.isArray(r) ? rowsOf(r) : okOf(r)));
const x = (sql, params) => (c) => c.execute(sql, params).then(([r]) => (Array.isArray(r) ? rowsOf(r) : okOf(r)));

const flow = [
  ['drop', q('drop table if exists app2')],
  ['create', q('create table app2 (id int not null auto_increment primary key, name varchar(40) not null unique, qty int default 0, ' +
    'price decimal(10,2), meta json, born date)')],
  ['insert prepared', x('insert into app2 (name, qty, price, meta, born) values (?, ?, ?, ?, ?)',
    ['apple', 1, '1.50', JSON.stringify({ k: 1, l: [1, 2], s: 'x' }), '2024-01-02'])],
  ['insert escaped', q('insert into app2 (name, qty, meta) values (?, ?, ?)', ['banana', 2, '{"a": true, "n": null}'])],
  ['insert json array', q("insert into app2 (name, meta) values ('cherry', '[1, \"two\", 3.5]')")],
  ['json text', q('select id, meta from app2 order by id')],
  ['json prepared', x('select id, meta from app2 where id >= ? order by id', [1])],
  ['update same value', q("update app2 set qty = 2 where name = 'banana'")],
  ['update changes', q('update app2 set qty = qty + 1 where qty is not null')],
  ['update some same', q("update app2 set qty = 3 where name in ('apple', 'banana', 'cherry')")],
  ['update prepared same', x('update app2 set qty = ?, price = ? where id = ?', [3, '1.50', 1])],
  ['update prepared changes', x('update app2 set price = ? where id = ?', ['2.25', 1])],
  ['update none', q("update app2 set qty = 9 where name = 'nobody'")],
  ['update to null', q("update app2 set price = null where name = 'banana'")],
  ['update null again', q("update app2 set price = null where name = 'banana'")],
  ['rows', q('select id, name, qty, price, born from app2 order by id')],
  ['duplicate key', q("insert into app2 (name) values ('apple')")],
  ['duplicate key prepared', x('insert into app2 (name) values (?)', ['apple'])],
  ['syntax', q('selec 1')],
  ['no such table', q('select * from no_such_table')],
  ['no such table prepared', x('select * from no_such_table where 1 = ?', [1])],
  ['truncate', q('truncate table app2')],
  ['after truncate', q("insert into app2 (name) values ('date'), ('elder')")],
  ['ids after truncate', q('select id, name from app2 order by id')],
  // Sequelize's upsert, a prepared statement on a table with two keys (its id and a unique name):
  // DuckDB's prepare needs the conflict's key named, as the statement's run has it.
  ['upsert prepared', x('insert into app2 (id, name, qty) values (?, ?, ?) on duplicate key update `id`=VALUES(`id`), ' +
    '`name`=VALUES(`name`), `qty`=VALUES(`qty`);', [1, 'date2', 7])],
  ['upsert prepared new', x('insert into app2 (id, name, qty) values (?, ?, ?) on duplicate key update `qty`=VALUES(`qty`)', [9, 'fig', 1])],
  ['rows after upsert', q('select id, name, qty from app2 order by id')],
  ['matrix drop', q('drop table if exists types2')],
  ['matrix create', q('create table types2 (id int primary key, ti tinyint, si smallint, i int, bi bigint, ' +
    'd decimal(12,4), dbl double, s varchar(20), bl blob, dt date, j json, ts datetime)')],
  ['matrix insert', x('insert into types2 values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [1, -128, -32768, -2147483648, '-9223372036854775808', '-12345678.1234', 2.5, 'héllo', Buffer.from([0, 1, 255]), '2024-02-29', '{"a": [1, {"b": null}]}', '2024-02-29 13:14:15'])],
  ['matrix insert max', x('insert into types2 values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [2, 127, 32767, 2147483647, '9223372036854775807', '99999999.9999', -0.125, '', Buffer.alloc(0), '1970-01-01', '[]', '1970-01-01 00:00:00'])],
  ['matrix insert nulls', x('insert into types2 values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [3, null, null, null, null, null, null, null, null, null, null, null])],
  ['matrix text', q('select * from types2 order by id')],
  ['matrix prepared', x('select * from types2 where id > ? order by id', [0])],
  // MySQL's semantics DuckDB's operators and functions have otherwise: / divides exactly (7/2 is
  // 3.5, a DECIMAL on MariaDB, compared here), CONCAT is NULL with a NULL, LENGTH counts bytes,
  // <=> is NULL-safe equality; by text and by prepared statements.
  ['semantics', q("select 7/2 = 3.5 as d, -7/2 = -3.5 as nd, 7 /-2 = -3.5 as md, 100 * 3 / 7 > 42.85 as p, 7/0 is null as z, " +
    "concat('a', null) as cn, concat('a', 1, 'b') as c1, length('é') as l, octet_length('é') as ol, char_length('é') as cl, " +
    'null <=> null as nn, 1 <=> null as n1, 1 <=> 1 as eq')],
  ['semantics prepared', x('select ? / 2 = 3.5 as d, concat(?, null) as cn, concat(?, ?) as cc, length(?) as l, ? <=> null as nn, ? <=> 1 as eq',
    [7, 'a', 'a', 'b', 'é', null, 1])],
  // MySQL's functions of a date's text, FIELD, ELT, INSERT, CONV, HEX, and NOW()'s digits.
  ['functions', q("select year('2024-03-04') as y, dayofweek('2024-03-04') as dow, weekday(dt) as wd, week('2024-01-07') as w, " +
    "date_format('2024-03-04', '%Y') as df, field('b', 'a', 'b') as f, elt(2, 'a', 'b') as e, insert('Quadratic', 3, 4, 'What') as ins, " +
    "conv('a', 16, 2) as cv, hex(255) as hx, length(now()) as nl from types2 where id = 1")],
  ['functions prepared', x('select year(?) as y, dayofweek(?) as dow, field(?, ?, ?) as f, date_add(ts, interval 1 hour) as later from types2 where id = ?',
    ['2024-03-04', '2024-03-04', 'b', 'a', 'b', 1])],
];

(async () => {
  const options = {
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB || undefined,
    dateStrings: true, supportBigNumbers: true, bigNumberStrings: true, timezone: 'Z',
  };
  const conn = await mysql.createConnection(options);
  for (const [label, fn] of flow) {
    await step(conn, label, fn);
  }
  await conn.end();
  // Without CLIENT_FOUND_ROWS an UPDATE's affected rows are the rows it changed.
  const changed = await mysql.createConnection({ ...options, flags: ['-FOUND_ROWS'] });
  await step(changed, 'no found rows: update', q("update app2 set qty = 5 where name = 'date'"));
  await step(changed, 'no found rows: update same value again', q("update app2 set qty = 5 where name = 'date'"));
  await step(changed, 'no found rows: update prepared', x('update app2 set qty = ? where id > ?', [5, 0]));
  await changed.end();
})().catch((e) => { console.error(e); process.exit(1); });
