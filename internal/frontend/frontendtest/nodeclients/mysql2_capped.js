// Drives node mysql2 through the ways a client names its database (the login's, USE, changeUser's
// COM_CHANGE_USER) against a cluster capped at one engine connection: first alone, then while
// another connection's transaction holds that connection. Every probe must answer (none may wait
// for the transaction's end). Environment: MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD,
// MYSQL_DB (the engine's own database), MYSQL_OTHER (one more, holding table t with the row 7).
// Prints one JSON line per probe: {"probe", "ok": rows or "ok"} or {"probe", "error": errno}.
const mysql = require('mysql2/promise');

const env = process.env;
const connect = (database) => mysql.createConnection({
  host: env.MYSQL_HOST, port: Number(env.MYSQL_PORT), user: env.MYSQL_USER,
  password: env.MYSQL_PASSWORD || undefined, database,
});
const cell = (v) => (v === null ? null : String(v));

async function probe(name, fn) {
  let out;
  try {
    const r = await fn();
    out = { probe: name, ok: Array.isArray(r) ? r.map((row) => row.map(cell)) : 'ok' };
  } catch (e) {
    if (!e.errno) throw e; // not the server's answer
    out = { probe: name, error: e.errno };
  }
  console.log(JSON.stringify(out));
}

const q = (c, sql) => async () => {
  const [rows] = await c.query({ sql, rowsAsArray: true });
  return Array.isArray(rows) ? rows : null;
};

(async () => {
  const db = env.MYSQL_DB, other = env.MYSQL_OTHER;
  const where = `select database() = '${db}', database() = '${other}'`;
  const b = await connect(other);
  await probe('login to the other database', q(b, where));
  await probe('its table', q(b, 'select id from t'));
  await probe('use db', q(b, `use ${db}`));
  await probe('select 1', q(b, 'select 1'));
  await probe('use other', q(b, `use ${other}`));
  await probe('the table after use', q(b, 'select id from t'));
  await probe('changeUser db', () => b.changeUser({ user: env.MYSQL_USER, password: env.MYSQL_PASSWORD || '', database: db }));
  await probe('after changeUser', q(b, where));
  await b.end();

  // Another connection's transaction holds the cluster's only engine connection.
  const a = await connect(db);
  await probe('holder begins', q(a, 'begin'));
  await probe('holder reads', q(a, 'select 1 from dual'));
  const c = await connect(other);
  await probe('use db while held', q(c, `use ${db}`));
  await probe('use other while held', q(c, `use ${other}`));
  await probe('changeUser db while held', () => c.changeUser({ user: env.MYSQL_USER, password: env.MYSQL_PASSWORD || '', database: db }));
  await probe('changeUser other while held', () => c.changeUser({ user: env.MYSQL_USER, password: env.MYSQL_PASSWORD || '', database: other }));
  await probe('holder commits', q(a, 'commit'));
  await probe('after the holder', q(c, where));
  await c.end();
  await a.end();
})().catch((e) => { console.error(e); process.exit(1); });
