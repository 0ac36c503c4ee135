// node mysql2 running a statement whose capacity lease is lost (MYSQL_HOST, MYSQL_PORT,
// MYSQL_USER, SQL): the error as the application's retry logic reads it (errno, sqlState and
// code: 1213 40001 ER_LOCK_DEADLOCK is what ORMs retry), then the connection's next statement.
// Prints "case name: result" lines.
'use strict';
const mysql = require('mysql2/promise');

async function main() {
  const conn = await mysql.createConnection({
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
  });
  console.log('case started: yes');
  try {
    await conn.query(process.env.SQL);
    console.log('case lost: none');
  } catch (e) {
    console.log(`case lost: ${e.errno} ${e.sqlState} ${e.code}`);
    console.log(`message: ${e.message}`);
  }
  const [rows] = await conn.query('select 40 + 2 as v');
  console.log(`case after: ${rows[0].v}`);
  await conn.end();
}

main().catch((e) => { console.log(`error: ${e.stack}`); process.exit(1); });
