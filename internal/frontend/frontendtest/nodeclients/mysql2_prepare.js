// Prepares each statement of a JSON list (the file STATEMENTS names) through node mysql2's
// prepare() against a MySQL-protocol server (MYSQL_HOST, MYSQL_PORT, MYSQL_USER,
// MYSQL_PASSWORD, MYSQL_DB) and prints what the prepare's answer told it: the statement's
// result columns (statement.columns) and parameter count, or the error's errno. One JSON line
// per statement.
const fs = require('fs');
const mysql = require('mysql2/promise');

(async () => {
  const conn = await mysql.createConnection({ host: process.env.MYSQL_HOST, port: +process.env.MYSQL_PORT,
    user: process.env.MYSQL_USER, password: process.env.MYSQL_PASSWORD, database: process.env.MYSQL_DB || undefined });
  const statements = JSON.parse(fs.readFileSync(process.env.STATEMENTS, 'utf8'));
  for (const sql of statements) {
    try {
      const st = await conn.prepare(sql);
      const info = st.statement || st; // the promise wrapper's PreparedStatementInfo
      const cols = (info.columns || []).map((c) => [c.schema, c.table, c.orgTable, c.name, c.orgName,
        c.columnType, c.characterSet, c.columnLength, c.flags, c.decimals].join(' '));
      console.log(JSON.stringify({ probe: sql, ok: { params: (info.parameters || []).length, columns: cols } }));
      await st.close();
    } catch (e) {
      console.log(JSON.stringify({ probe: sql, error: e.errno }));
    }
  }
  await conn.end();
})();
