// What a node mysql2 application sees of a table gs (gosqlsurvey_oracle_test.go's): query and
// execute, their fields (names, table, original names, database, type, flags, length,
// decimals), rowsAsArray, typeCast, dateStrings, decimalNumbers, multipleStatements and a
// changeUser to the same user (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB;
// TEXT_LENGTHS=0 leaves text columns' lengths out).
// The current database's name is written DB: each target's differs. One JSON line per probe,
// as mysql2_probe.js prints them.
const mysql = require('mysql2/promise');

async function probe(name, fn) {
  try {
    console.log(JSON.stringify({ probe: name, ok: await fn() }));
  } catch (e) {
    console.log(JSON.stringify({ probe: name, error: { errno: e.errno, sqlState: e.sqlState, code: e.code } }));
  }
}

const env = process.env;
const base = {
  host: env.MYSQL_HOST, port: Number(env.MYSQL_PORT), user: env.MYSQL_USER,
  password: env.MYSQL_PASSWORD || undefined, database: env.MYSQL_DB || undefined,
};

(async () => {
  const c = await mysql.createConnection(base);
  const [[{ d: current }]] = await c.query('select database() as d');
  const db = (s) => (s && s === current ? 'DB' : s);
  const fields = (fs) => (fs || []).map((f) => ({
    name: f.name, orgName: f.orgName, table: f.table, orgTable: f.orgTable, db: db(f.db),
    type: f.columnType, flags: f.flags, decimals: f.decimals,
    // TEXT_LENGTHS=0: an engine that keeps no VARCHAR's length (DuckDB, PostgreSQL's text).
    length: env.TEXT_LENGTHS === '0' && [15, 252, 253, 254].includes(f.columnType) ? 'any' : f.columnLength,
  }));
  const both = ([rows, fs]) => [rows, fields(fs)];
  const queries = [
    ['select *', 'select * from gs order by id', []],
    ['select columns', 'select id, v, d from gs where id = ?', [1]],
    ['select alias', 'select g.v as alias, g.id from gs g where g.v = ?', ['b']],
    ['count', 'select count(*), count(d) as cd from gs', []],
    ['expressions', 'select 1 + 1 as two, concat(v, ?) as cv from gs order by id', ['x']],
  ];
  for (const [name, sql, args] of queries) {
    await probe('query ' + name, () => c.query(sql, args).then(both));
    await probe('execute ' + name, () => c.execute(sql, args).then(both));
    await probe('rowsAsArray ' + name, () => c.query({ sql, rowsAsArray: true }, args).then(([r]) => r));
    await probe('typeCast ' + name, () => c.query({ sql, typeCast: (f, next) => `${f.type}:${f.string()}` }, args).then(([r]) => r));
  }
  const dated = await mysql.createConnection({ ...base, dateStrings: true, decimalNumbers: true, supportBigNumbers: true, bigNumberStrings: true });
  await probe('dateStrings query', () => dated.query('select dt, dd, d, n, e from gs order by id').then(([r]) => r));
  await probe('dateStrings execute', () => dated.execute('select dt, dd, d, n, e from gs where id > ? order by id', [0]).then(([r]) => r));
  await dated.end();
  const multi = await mysql.createConnection({ ...base, multipleStatements: true });
  await probe('multipleStatements', () => multi.query('select id from gs where id = 1; select v from gs order by id; select count(*) as n from gs').then(([r]) => r));
  await probe('multipleStatements error', () => multi.query('select 1 as a; select * from no_such_gs; select 2 as b').then(([r]) => r));
  await probe('multipleStatements after error', () => multi.query('select 3 as c').then(([r]) => r));
  await multi.end();
  await probe('changeUser', () => c.changeUser({ user: env.MYSQL_USER, password: env.MYSQL_PASSWORD || undefined, database: env.MYSQL_DB || undefined }).then(() => 'ok'));
  await probe('after changeUser', () => c.execute('select v from gs where id = ?', [2]).then(([r]) => r));
  await c.end();
})();
