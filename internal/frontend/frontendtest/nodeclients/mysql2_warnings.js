// Two node mysql2 clients (a and b) of one MySQL-protocol server (MYSQL_HOST, MYSQL_PORT,
// MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB) interleave statements with warnings or errors: each
// must see its own warning_count and SHOW WARNINGS, never the other's. SETUP runs first on a;
// A_SQL and B_SQL are the statements that warn (or fail) on a and b. Prints one JSON line per
// step: {"probe": name, "ok": value} or {"probe": name, "error": errno}.
const mysql = require('mysql2/promise');

async function step(name, fn) {
  try {
    console.log(JSON.stringify({ probe: name, ok: await fn() }));
  } catch (e) {
    console.log(JSON.stringify({ probe: name, error: e.errno }));
  }
}

const warnings = (c) => c.query('show warnings').then(([rows]) => rows.map((r) => [r.Level, r.Code, r.Message]));
const count = (c) => c.query('select @@warning_count as n').then(([rows]) => Number(rows[0].n));
const run = (c, sql) => c.query(sql).then(([r]) => (Array.isArray(r) ? 'rows' : r.warningStatus));

(async () => {
  const open = () => mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB || undefined,
  });
  const a = await open();
  const b = await open();
  if (process.env.SETUP) await a.query(process.env.SETUP);
  await step('a runs', () => run(a, process.env.A_SQL));
  await step('a warning_count', () => count(a));
  await step('b sees none', () => warnings(b));
  await step('b warning_count', () => count(b));
  await step('b runs', () => run(b, process.env.B_SQL));
  await step('a sees its own', () => warnings(a));
  await step('b sees its own', () => warnings(b));
  await step('b prepared', () => b.execute(process.env.B_SQL).then(([r]) => (Array.isArray(r) ? 'rows' : r.warningStatus)));
  await step('a still its own', () => warnings(a));
  await a.end();
  await b.end();
})().catch((e) => { console.error(e); process.exit(1); });
