const { Pool } = require('pg');
// An application's day through node-postgres's Pool: a table with a serial key and columns of
// the common types, a parameterized INSERT ... RETURNING of JavaScript values (an object for
// json, an array for text[]), named statements, a transaction rolled back, upsert, CTE, window.
// Prints one line per step: its label and the rows as JSON, or the error's SQLSTATE and message.
// Usage: node appflow.js URL
(async () => {
  const pool = new Pool({connectionString: process.argv[2], max: 4});
  const q = async (label, text, values) => { try { const r = await pool.query(text, values); console.log(label, JSON.stringify(r.rows)); } catch (e) { console.log(label, 'ERR', e.code, e.message.split('\n')[0]); } };
  await q('drop', 'drop table if exists np');
  await q('create', 'create table np (id serial primary key, name text, score double precision, born date, at timestamptz, ok boolean, data json, amount numeric(12,2), tags text[])');
  await q('insert', 'insert into np (name, score, born, at, ok, data, amount, tags) values ($1,$2,$3,$4,$5,$6,$7,$8) returning id', ['a', 1.5, '2000-01-02', new Date(0), true, {k: 1}, '12.34', ['x','y']]);
  await q('select', 'select name, score, born::text as born, at, ok, data, amount, tags from np where id = $1', [1]);
  await q('named', {name: 'byname', text: 'select id from np where name = $1', values: ['a']});
  await q('named2', {name: 'byname', text: 'select id from np where name = $1', values: ['a']});
  const c = await pool.connect();
  try { await c.query('begin'); await c.query("insert into np (name) values ('t')"); await c.query('rollback'); const r = await c.query("select count(*)::int as n from np"); console.log('tx', JSON.stringify(r.rows)); } finally { c.release(); }
  await q('like', "select name from np where name ilike $1", ['A%']);
  await q('limit', 'select id from np order by id limit $1 offset $2', [10, 0]);
  await q('in', 'select id from np where id in ($1, $2)', [1, 2]);
  await q('upsert', "insert into np (id, name) values (1, 'z') on conflict (id) do update set name = excluded.name returning name");
  await q('cte', 'with t as (select 1 as x) select x from t');
  await q('window', 'select id, row_number() over (order by id) as rn from np');
  // Parameters PostgreSQL types by the other operand: an array for ANY, a number beside a column.
  await q('any', 'select id from np where id = any($1) order by id', [[1, 2]]);
  await q('anytext', 'select id from np where name <> all($1) order by id', [['q']]);
  await q('arith', 'update np set score = score * $1 + $2 where id = $3 returning score', [2, 1, 1]);
  // Functions as PostgreSQL types them: node-postgres reads an int8 or a numeric as a string.
  const t = async (label, text, values) => { try { const r = await pool.query(text, values); console.log(label, JSON.stringify(r.rows), r.fields.map(f => f.name + ':' + f.dataTypeID).join(',')); } catch (e) { console.log(label, 'ERR', e.code, e.message.split('\n')[0]); } };
  await t('functions', "select sum(id), sum(id::int8) as big, length(name), char_length(name) as chars, strpos(name, 'z') as pos, initcap('hello wORLD-x') as cap, encode('\\x01ff'::bytea, 'hex') as hex, encode('hi'::bytea, 'base64') as b64, date_part('year', date '2024-05-06') as y from np group by name");
  await t('window sum', 'select id, sum(id) over (order by id) as running, sum(id) over () from np order by id');
  await t('series', 'select * from generate_series(1, 3) as g order by 1');
  await t('series2', "select generate_series(1, 2) as n, to_char(date '2024-03-04', 'FMMonth DD, YYYY') as d, to_char(timestamp '2024-03-04 05:06:07.5', 'YYYY-MM-DD HH24:MI:SS.MS') as ts");
  await t('extract', "select extract(year from date '2024-03-04') as y, extract(epoch from timestamptz '2024-01-01 00:00:01.25+00') as e, extract(second from timestamp '2024-03-04 05:06:07.5') as s");
  await q('json', "select jsonb_agg(name order by name desc) as names, json_agg(id) as ids, jsonb_typeof(to_jsonb(name)) as typ from np group by name");
  await pool.end();
})().catch(e => { console.log('fatal', e.message); process.exit(1); });
