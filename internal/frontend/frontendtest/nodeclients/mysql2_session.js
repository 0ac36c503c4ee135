// Drives one node mysql2 connection (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB)
// through a long session: the steps, a JSON array on standard input, each {sql, params,
// prepared}, run in order, text queries with query() and prepared ones with execute() (the
// binary protocol). Prints one JSON line per step: {"probe": "step N", "ok": rows} with every
// value a string or null, {"probe": "step N", "ok": "affected N"}, or {"probe": "step N",
// "error": errno}; the session goes on after an error.
const mysql = require('mysql2/promise');

const cell = (v) => (v === null ? null : Buffer.isBuffer(v) ? v.toString('hex') : String(v));

(async () => {
  const steps = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB || undefined,
    supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, multipleStatements: false,
  });
  for (const [i, s] of steps.entries()) {
    const q = { sql: s.sql, rowsAsArray: true };
    try {
      const [r] = s.prepared ? await conn.execute(q, s.params || []) : await conn.query(q);
      const ok = Array.isArray(r) ? r.map((row) => row.map(cell)) : `affected ${r.affectedRows}`;
      console.log(JSON.stringify({ probe: `step ${i}`, ok }));
    } catch (e) {
      if (!e.errno) throw e; // not the server's answer: the session is broken
      console.log(JSON.stringify({ probe: `step ${i}`, error: e.errno }));
    }
  }
  await conn.end();
})().catch((e) => { console.error(e); process.exit(1); });
