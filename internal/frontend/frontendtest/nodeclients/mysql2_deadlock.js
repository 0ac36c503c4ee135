// A writer's transaction ended by error 1213 (a deadlock: InnoDB rolled it back), through node
// mysql2 (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB). Usage: node
// mysql2_deadlock.js deadlock|commit
//   deadlock: two clients update two rows in opposite orders (MariaDB's deadlock, at a statement);
//   commit: one client's transaction the server cannot keep (the embedded DuckDB's: a refused
//   statement it cannot undo alone, after a write of RAND()'s value): its COMMIT is refused.
// Prints one JSON line per step: the error as mysql2 gives it (code, errno, sqlState, fatal,
// message), then whether the connection goes on, what the transaction left, a next transaction.
const mysql = require('mysql2/promise');

const how = process.argv[2];
const connect = () => mysql.createConnection({
  host: process.env.MYSQL_HOST, port: Number(process.env.MYSQL_PORT), user: process.env.MYSQL_USER,
  password: process.env.MYSQL_PASSWORD, database: process.env.MYSQL_DB || undefined,
});
const out = (step, o) => console.log(JSON.stringify({ step, ...o }));
const errorOf = (e) => ({ cls: e.constructor.name, code: e.code, errno: e.errno, sqlState: e.sqlState, fatal: e.fatal, message: e.message });

(async () => {
  const a = await connect();
  const b = await connect();
  await a.query('drop table if exists dl');
  await a.query('create table dl (id int primary key, v int)');
  await a.query('insert into dl values (1, 0), (2, 0)');
  let victim = a;
  if (how === 'deadlock') {
    await a.beginTransaction();
    await b.beginTransaction();
    await a.query('update dl set v = 1 where id = 1');
    await b.query('update dl set v = 2 where id = 2');
    const aSecond = a.query('update dl set v = 1 where id = 2').then(() => null, (e) => e);
    await new Promise((r) => setTimeout(r, 500)); // a waits for b's row
    const bSecond = await b.query('update dl set v = 2 where id = 1').then(() => null, (e) => e);
    const aErr = await aSecond;
    const err = aErr || bSecond;
    victim = aErr ? a : b;
    out('the error', errorOf(err));
    await (aErr ? b : a).commit();
  } else {
    await a.beginTransaction();
    await a.query('insert into dl values (3, 0)');
    await a.query('insert into dl values (4, floor(rand()))');
    await a.query('insert into dl values (3, 9)').then(() => out('the duplicate', { errno: 0 }), (e) => out('the duplicate', { errno: e.errno }));
    await a.commit().then(() => out('the error', { cls: 'none' }), (e) => out('the error', errorOf(e)));
  }
  try {
    out('goes on', { rows: (await victim.query('select 1 as one'))[0] });
    out('in a transaction', { rows: (await victim.query('select @@in_transaction as t'))[0] });
    out('left', { rows: (await victim.query('select count(*) as n from dl where id > 2 or v <> 0 and v <> 1 and v <> 2'))[0] });
    await victim.beginTransaction();
    await victim.query('insert into dl values (10, 10)');
    await victim.commit();
    out('next transaction', { rows: (await victim.query('select id, v from dl where id = 10'))[0] });
  } catch (e) {
    out('failed', errorOf(e));
  }
  await a.end();
  await b.end();
})().catch((e) => { console.error(e); process.exit(1); });
