// A node application's first minute through mysql2 with its defaults (MYSQL_HOST, MYSQL_PORT,
// MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB): createConnection and createPool, a query and a prepared
// statement with parameters, the fields mysql2 describes (type, length, decimals), a transaction
// rolled back and one committed, an error and the connection still usable. One JSON line a step.
const mysql = require('mysql2/promise');

const cfg = { host: process.env.MYSQL_HOST, port: +process.env.MYSQL_PORT, user: process.env.MYSQL_USER,
  password: process.env.MYSQL_PASSWORD, database: process.env.MYSQL_DB };

function show(v) {
  if (v instanceof Date) return { date: isNaN(v) ? 'Invalid' : v.toISOString() };
  if (Buffer.isBuffer(v)) return { buffer: v.toString('hex') };
  return v;
}

async function step(label, fn) {
  let out;
  try {
    out = { ok: await fn() };
  } catch (e) {
    out = { error: { errno: e.errno, code: e.code } };
  }
  console.log(JSON.stringify({ step: label, ...out }));
}

const fieldsOf = (fields) => fields.map((f) => [f.name, f.columnType, f.columnLength, f.decimals]);
const rowsOf = (rows) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, show(v)])));
const QUERY = "select 1 as one, 1+1 as two, 7/2 as half, 1.5 as d, 'abc' as s, cast(7 as signed) as si, " +
  'null as n, id, name, price, ok, born from cs_t where id = ?';

(async () => {
  const conn = await mysql.createConnection(cfg);
  await step('query', async () => { const [r, f] = await conn.query(QUERY, [1]); return [rowsOf(r), fieldsOf(f)]; });
  await step('execute', async () => { const [r, f] = await conn.execute(QUERY, [1]); return [rowsOf(r), fieldsOf(f)]; });
  await step('begin', () => conn.beginTransaction().then(() => true));
  await step('insert', async () => { const [r] = await conn.query('insert into cs_t (name, price, ok) values (?, ?, ?)', ['m', '3.25', true]); return [r.affectedRows, r.insertId]; });
  await step('insert prepared', async () => { const [r] = await conn.execute('insert into cs_t (name, born) values (?, ?)', ['p', '2021-03-04']); return [r.affectedRows, r.insertId]; });
  await step('update', async () => { const [r] = await conn.execute('update cs_t set price = ? where ok = 1 and name = ?', ['4.50', 'm']); return r.affectedRows; });
  await step('rollback', () => conn.rollback().then(() => true));
  await step('count', async () => { const [r] = await conn.query('select count(*) as c from cs_t'); return rowsOf(r); });
  await step('missing table', () => conn.query('select * from no_such_t'));
  await step('after error', async () => { const [r] = await conn.execute('select ? + 1 as v', [41]); return rowsOf(r); });
  await conn.end();
  const pool = mysql.createPool(cfg);
  await step('pool', async () => { const [r] = await pool.query('select name from cs_t where id = ?', [1]); return rowsOf(r); });
  await step('pool getConnection', async () => { const c = await pool.getConnection(); const [r] = await c.execute('select count(*) as c from cs_t'); c.release(); return rowsOf(r); });
  await pool.end();
})().catch((e) => { console.error(e); process.exit(1); });
