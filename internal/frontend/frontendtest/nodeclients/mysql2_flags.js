// What a node mysql2 user sees of CLIENT_FOUND_ROWS (mysql2 asks for it unless told not to):
// two connections at once, with and without it, an UPDATE that changes nothing in turn on
// each, by text and by prepared statement: affectedRows, and changedRows, which mysql2 reads in
// the OK packet's info. Prints one line per value (MYSQL_HOST, MYSQL_PORT, MYSQL_USER,
// MYSQL_PASSWORD, MYSQL_DB).
const mysql = require('mysql2/promise');

(async () => {
  const options = {
    host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PASSWORD || undefined, database: process.env.MYSQL_DB,
  };
  const found = await mysql.createConnection(options);
  const plain = await mysql.createConnection({ ...options, flags: ['-FOUND_ROWS'] });
  await plain.query('create table flags_m (id int primary key, v int)');
  await plain.query('insert into flags_m values (1, 1), (2, 2)');
  for (let i = 0; i < 3; i++) {
    for (const [name, conn] of [['found rows', found], ['plain', plain]]) {
      const [r] = await conn.query('update flags_m set v = v');
      console.log(`${name} update ${i}: ${r.affectedRows}`);
      console.log(`${name} update ${i} changedRows: ${r.changedRows}`);
      const [p] = await conn.execute('update flags_m set v = ? where id <= ?', [2, 2]);
      console.log(`${name} prepared update ${i}: ${p.affectedRows}`);
      console.log(`${name} prepared update ${i} changedRows: ${p.changedRows}`);
    }
  }
  await found.end();
  await plain.end();
})().catch((e) => { console.error(e); process.exit(1); });
