// Cases for node-postgres through the proxy: one "case NAME: RESULT" line each.
// usage: node cases.js URL session|transaction TABLE
'use strict';
const { Client } = require('pg');
const { from: copyFrom, to: copyTo } = require('pg-copy-streams');
const { pipeline } = require('stream/promises');
const { Readable, Writable } = require('stream');

const [url, mode, table] = process.argv.slice(2);

const SESSION_STEPS = 64;

// Statement i of a long session: [sql, params or undefined, the result as cells() writes it];
// rows and nulls count what the session inserted into table, and with b NULL.
function sessionStep(i, table, rows, nulls) {
  const k = i % 5 + 2;
  const series = (n, f) => Array.from({ length: n }, (_, x) => f(x)).join(';');
  switch (i % 8) {
    case 0: return [`select ${i} as n, 'row-${i}' as s, null as z`, undefined, `${i}|row-${i}|null`];
    case 1: return ['select $1::int + 1, $2::text, $3::text', [i, `p-${i}`, null], `${i + 1}|p-${i}|null`];
    case 2: return i % 16 === 10 ? [`select * from no_such_table_${i}`, undefined, 'error 42P01'] : [`selec ${i}`, undefined, 'error 42601'];
    case 3: return [`select x, x * x from generate_series(0, ${k - 1}) as g(x) order by x`, undefined, series(k, (x) => `${x}|${x * x}`)];
    case 4: return [`insert into ${table} values (${i}, 'v-${i}')`, undefined, '1'];
    case 5: return ['select case when x = $1::int then null else x end from generate_series(0, 3) as g(x) order by g.x', [i % 4],
      series(4, (x) => (x === i % 4 ? 'null' : `${x}`))];
    case 6: return [`select count(*), count(b) from ${table}`, undefined, `${rows}|${rows - nulls}`];
    default: return [`insert into ${table} values ($1::int, $2::text)`, [1000 + i, null], '1'];
  }
}

// A statement's result: its rows' values joined by | and ;, or its row count.
function cells(r) {
  if (!r.fields || r.fields.length === 0) return `${r.rowCount}`;
  return r.rows.map((row) => row.map((v) => (v === null ? 'null' : `${v}`)).join('|')).join(';');
}

// SESSION_STEPS statements in a row on one connection (text queries, parameterized ones,
// errors with more statements after them, NULLs, multi-row results, writes and reads of
// them): "ok N", or the first step that answered otherwise.
async function longSession(url, table) {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`create table ${table} (a int, b text)`);
    let rows = 0;
    let nulls = 0;
    for (let i = 0; i < SESSION_STEPS; i++) {
      const [text, values, want] = sessionStep(i, table, rows, nulls);
      let got;
      try {
        got = cells(await c.query({ text, values, rowMode: 'array' }));
      } catch (e) {
        got = `error ${e.code || e.message}`;
      }
      if (got !== want) return `step ${i} ${JSON.stringify(text)}: ${got}, want ${want}`;
      if (i % 8 === 4 || i % 8 === 7) rows++;
      if (i % 8 === 7) nulls++;
    }
    return `ok ${SESSION_STEPS}`;
  } finally {
    await c.end();
  }
}

const EDGE_TEXT = 'O\'Brien "q" C:\\temp\\new \u00fc\u20ac \u{1d11e}\u{1f600} \u65e5\u672c\u8a9e\nend';
const WIDE = '\u00fc\u20ac\u{1d11e}\u{1f600}\u65e5\u672c\u8a9e';
const NULL_TYPES = ['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'text', 'varchar', 'bool', 'date', 'time',
  'timestamp', 'timestamptz', 'interval', 'bytea', 'uuid', 'json'];

// Values at the edges (cases.py's edges): text beyond the BMP with quotes and backslashes both
// ways, 100 KB out and 200 KB in, a 2 MB result, NULL in every type, 100 parameters with NULLs
// among them, and several statements in one simple query.
async function edges(c, table) {
  const q = async (text, values) => (await c.query({ text, values, rowMode: 'array' })).rows;
  const out = [];
  let r = await q(`select $1::text, '${WIDE}'`, [EDGE_TEXT]);
  out.push(`uni=${r[0][0] === EDGE_TEXT && r[0][1] === WIDE ? 1 : 0}`);
  r = await q("select repeat('ab', 50000)");
  out.push(`out=${r[0][0] === 'ab'.repeat(50000) ? r[0][0].length : -1}`);
  r = await q('select length($1::text)', ['ab'.repeat(100000)]);
  out.push(`in=${Number(r[0][0])}`);
  r = await q("select x, repeat('y', 100) from generate_series(0, 19999) as g(x) order by x");
  out.push(`rows=${r.length},${r.filter((row) => row[1] === 'y'.repeat(100)).reduce((s, row) => s + Number(row[0]), 0)}`);
  r = await q(`select ${NULL_TYPES.map((t) => `null::${t}`).join(', ')}`);
  out.push(`nulls=${r[0].filter((v) => v === null).length}`);
  const vals = Array.from({ length: 100 }, (_, i) => (i % 3 === 0 ? null : `v${i}`));
  r = await q(`select ${vals.map((_, i) => `$${i + 1}::text`).join(', ')}`, vals);
  out.push(`params=${JSON.stringify(r[0]) === JSON.stringify(vals) ? vals.length : -1}`);
  await c.query(`create table ${table} (a int); insert into ${table} values (1); insert into ${table} values (2)`);
  out.push(`multi=${Number((await q(`select count(*) from ${table}`))[0][0])}`);
  return out.join(' ');
}

// PostgreSQL's semantics a client sees on any engine (cases.py's SEMANTICS).
const SEMANTICS = "select (7/2)::text, (-7/2)::text, ('abc' ~ 'b')::text, ('ABC' ~* 'b')::text, ('abc' ~ '^b')::text, " +
  "('abc' similar to 'a%')::text, ('abc' similar to 'a.c')::text, quote_ident('select'), to_char(1234.5, 'FM9,999.00')";

// Django's nested atomic blocks as cases.py's nested_tx runs them: "ROLLBACK TO's answer, the
// next statement's, the rows kept".
async function nestedTx(c, table) {
  const execute = async (text) => {
    const r = await c.query({ text, rowMode: 'array' });
    return r.fields && r.fields.length ? `${r.rows[0][0]}` : 'ok';
  };
  await execute(`create table ${table} (a int)`);
  await execute('begin');
  await execute(`insert into ${table} values (1)`);
  await execute('savepoint s1');
  await execute(`insert into ${table} values (2)`);
  await execute('release savepoint s1');
  await execute('savepoint s2');
  await execute(`insert into ${table} values (3)`);
  const out = [];
  let failed = false;
  for (const text of ['rollback to savepoint s2', 'select 1']) {
    try {
      out.push(await execute(text));
    } catch (e) {
      out.push(`error ${e.code}`);
      failed = true;
    }
  }
  await execute(failed ? 'rollback' : 'commit');
  out.push(await execute(`select count(*) from ${table}`));
  return out.join(' ');
}

// The session's own row of pg_stat_activity: its pid the one the driver holds, one row, a
// backend_start, its state and type.
const ACTIVITY = "select (pg_backend_pid() = $1::int)::text || ' ' || count(*)::text || ' ' || " +
  "bool_and(backend_start is not null and backend_start <= now())::text || ' ' || min(state) || ' ' || min(backend_type) " +
  'from pg_stat_activity where pid = pg_backend_pid()';

// Two clients write one row: the second waits for the first's COMMIT and writes on what it
// committed (PostgreSQL's row lock), "the second's answer and the row after".
async function writers(url, table) {
  const a = new Client({ connectionString: url });
  const b = new Client({ connectionString: url });
  await a.connect();
  await b.connect();
  try {
    await a.query(`create table ${table} (id int primary key, n int)`);
    await a.query(`insert into ${table} values (1, 1)`);
    await a.query('begin');
    await a.query(`update ${table} set n = n + 1 where id = 1`);
    const second = b.query(`update ${table} set n = n * 10 where id = 1`).then((r) => `${r.rowCount}`, (e) => `error ${e.code}`);
    await new Promise((r) => setTimeout(r, 300));
    await a.query(`update ${table} set n = n + 2 where id = 1`);
    await a.query('commit');
    return `${await second} ${(await a.query(`select n from ${table}`)).rows[0].n}`;
  } finally {
    await a.end();
    await b.end();
  }
}

async function main() {
  const client = new Client({ connectionString: url });
  const notices = [];
  client.on('notice', (n) => notices.push(n.message));
  await client.connect();
  await client.query(`create table ${table} (a int, b text)`);

  const cases = {
    async semantics() { return (await client.query({ text: SEMANTICS, rowMode: 'array' })).rows[0].join(' '); },
    async div_zero() { return (await client.query('select 1/0 as v')).rows[0].v; },
    async nested_tx() { return nestedTx(client, `${table}_n`); },
    async rollback() {
      await client.query('begin');
      await client.query(`insert into ${table} values (1, 'x')`);
      await client.query('rollback');
      return (await client.query(`select count(*)::int as n from ${table}`)).rows[0].n;
    },
    async copy_in() {
      await pipeline(Readable.from(['1\ta\n2\tb\n', '3\t\\N\n']), client.query(copyFrom(`copy ${table} from stdin`)));
      const r = await client.query(`select count(*)::int as n, count(b)::int as m from ${table}`);
      return `${r.rows[0].n} ${r.rows[0].m}`;
    },
    async copy_out() {
      let data = '';
      const sink = new Writable({ write(chunk, _enc, cb) { data += chunk.toString(); cb(); } });
      await pipeline(client.query(copyTo(`copy (select a, b from ${table} order by a) to stdout`)), sink);
      return JSON.stringify(data);
    },
    async copy_in_tx() {
      await client.query('begin');
      await pipeline(Readable.from(['4\td\n']), client.query(copyFrom(`copy ${table} from stdin`)));
      await client.query('rollback');
      return (await client.query(`select count(*)::int as n from ${table}`)).rows[0].n;
    },
    async notice() {
      await client.query("do $$ begin raise notice 'hello %', 42; end $$");
      return notices[notices.length - 1];
    },
    async bytea() {
      const r = await client.query('select $1::bytea as v', [Buffer.from([1, 0, 255])]);
      return r.rows[0].v.toString('hex');
    },
    async names() { // result columns as PostgreSQL names them: what rows are keyed by
      const r = await client.query({ text: `select count(*), 40 + 2, lower('A'), 1::text, max(a) as top from ${table}`, rowMode: 'array' });
      return r.fields.map((f) => f.name).join(' ');
    },
    async prepared() {
      let total = 0;
      for (let i = 0; i < 6; i++) {
        total += (await client.query({ name: 'plus_one', text: 'select $1::int + 1 as v', values: [i] })).rows[0].v;
      }
      return total;
    },
    async notify() {
      const listener = new Client({ connectionString: url });
      await listener.connect();
      try {
        const got = new Promise((resolve) => listener.on('notification', (n) => resolve(n.payload)));
        await listener.query('listen qf_channel');
        const other = new Client({ connectionString: url });
        await other.connect();
        await other.query("notify qf_channel, 'ping'");
        await other.end();
        return await Promise.race([got, new Promise((r) => setTimeout(() => r('none'), 10000).unref())]);
      } finally {
        await listener.end();
      }
    },
    async options() {
      const c = new Client({ connectionString: url, options: '-c statement_timeout=1234' });
      await c.connect();
      try {
        return (await c.query('show statement_timeout')).rows[0].statement_timeout;
      } finally {
        await c.end();
      }
    },
    async activity() { return (await client.query({ text: ACTIVITY, values: [client.processID], rowMode: 'array' })).rows[0][0]; },
    async writers() { return writers(url, `${table}_w`); },
    async long_session() { return longSession(url, `${table}_s`); },
    async edges() { return edges(client, `${table}_e`); },
    async error_recovers() {
      try { await client.query('select 1/0'); } catch (e) { /* expected */ }
      return (await client.query('select 7 as v')).rows[0].v;
    },
  };
  for (const [name, fn] of Object.entries(cases)) {
    let result;
    try {
      result = await fn();
    } catch (e) {
      result = `error ${e.code || e.message}`;
      try { await client.query('rollback'); } catch (_) { /* not in a transaction */ }
    }
    console.log(`case ${name}: ${result}`);
  }
  await client.end();
}

main().catch((e) => { console.log(`fatal: ${e.stack}`); process.exit(1); });
