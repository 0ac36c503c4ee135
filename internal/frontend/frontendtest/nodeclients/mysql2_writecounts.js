// Drives one node mysql2 connection (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_DB) through
// write statements and prints what the client sees of each: the steps, a JSON array of [sql,
// params or null] on standard input, run in order (with params: execute(), the binary
// protocol). Prints one JSON line per step: {"step": N, "insertId", "affectedRows",
// "warningStatus"}, or {"step": N, "error": errno}, or {"step": N, "rows": [...]} for a SELECT.
const mysql = require('mysql2/promise');

(async () => {
  const steps = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    database: process.env.MYSQL_DB || undefined, supportBigNumbers: true, bigNumberStrings: true,
  });
  for (const [i, [sql, params]] of steps.entries()) {
    try {
      const [r] = params ? await conn.execute({ sql, rowsAsArray: true }, params) : await conn.query({ sql, rowsAsArray: true });
      const out = Array.isArray(r)
        ? { step: i, rows: r.map((row) => row.map((v) => (v === null ? null : String(v)))) }
        : { step: i, insertId: String(r.insertId), affectedRows: r.affectedRows, warningStatus: r.warningStatus };
      console.log(JSON.stringify(out));
    } catch (e) {
      if (!e.errno) throw e;
      console.log(JSON.stringify({ step: i, error: e.errno }));
    }
  }
  await conn.end();
})().catch((e) => { console.error(e); process.exit(1); });
