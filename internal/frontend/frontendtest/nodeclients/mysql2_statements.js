// Runs a JSON list of [sql, params or null] (the file STATEMENTS names) through node mysql2
// against a MySQL-protocol server (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD,
// MYSQL_DB; MYSQL2_OPTIONS: more connection options, as JSON), one session: a statement with params as a prepared statement (execute), one
// without as a text query. One JSON line per statement: its rows, or the error's errno.
const fs = require('fs');
const mysql = require('mysql2/promise');

(async () => {
  const conn = await mysql.createConnection({ host: process.env.MYSQL_HOST, port: +process.env.MYSQL_PORT,
    user: process.env.MYSQL_USER, password: process.env.MYSQL_PASSWORD, database: process.env.MYSQL_DB || undefined,
    ...JSON.parse(process.env.MYSQL2_OPTIONS || '{}') });
  const statements = JSON.parse(fs.readFileSync(process.env.STATEMENTS, 'utf8'));
  for (const [i, [sql, params]] of statements.entries()) {
    const probe = `${i} ${sql}`;
    try {
      const [rows] = params ? await conn.execute(sql, params) : await conn.query(sql);
      const ok = Array.isArray(rows) ? rows.map((r) => Object.values(r).map(String)) : rows.affectedRows;
      console.log(JSON.stringify({ probe, ok }));
    } catch (e) {
      console.log(JSON.stringify({ probe, error: e.errno }));
    }
  }
  await conn.end();
})();
