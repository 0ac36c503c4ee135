// Cases for node-postgres through the proxy: one "case NAME: RESULT" line each.
// usage: node cases.js URL session|transaction TABLE
'use strict';
const { Client } = require('pg');
const { from: copyFrom, to: copyTo } = require('pg-copy-streams');
const { pipeline } = require('stream/promises');
const { Readable, Writable } = require('stream');

const [url, mode, table] = process.argv.slice(2);

async function main() {
  const client = new Client({ connectionString: url });
  const notices = [];
  client.on('notice', (n) => notices.push(n.message));
  await client.connect();
  await client.query(`create table ${table} (a int, b text)`);

  const cases = {
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
