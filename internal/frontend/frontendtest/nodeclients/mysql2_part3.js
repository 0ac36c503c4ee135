// What a node mysql2 user sees of COM_CHANGE_USER (changeUser), LOAD DATA LOCAL INFILE (a file
// and a stream given by infileStreamFactory) and a latin1 connection (charset
// LATIN1_SWEDISH_CI) with non-ASCII text (MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD,
// MYSQL_DB; CHANGE_USER, CHANGE_PASSWORD: a second login to change to). One JSON line per
// probe, as mysql2_probe.js prints them.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Readable } = require('stream');
const mysql = require('mysql2/promise');

async function probe(name, fn) {
  try {
    console.log(JSON.stringify({ probe: name, ok: await fn() }));
  } catch (e) {
    console.log(JSON.stringify({ probe: name, error: { errno: e.errno, sqlState: e.sqlState, code: e.code, message: e.message } }));
  }
}

const rows = ([r]) => (Array.isArray(r) ? r : { affectedRows: r.affectedRows, info: r.info, warningStatus: r.warningStatus });
const env = process.env;
const base = {
  host: env.MYSQL_HOST, port: Number(env.MYSQL_PORT), user: env.MYSQL_USER,
  password: env.MYSQL_PASSWORD || undefined, database: env.MYSQL_DB || undefined, rowsAsArray: true,
};

(async () => {
  const what = env.PROBES || 'changeuser,infile,latin1';
  if (what.includes('changeuser')) {
    const c = await mysql.createConnection(base);
    await probe('set before', () => c.query('set @cu = 5').then(rows));
    await probe('temporary table before', () => c.query('create temporary table cu_tmp (i int)').then(rows));
    await probe('prepare before', () => c.execute('select ? + 1 as n', [1]).then(rows));
    await probe('change user', () => c.changeUser({ user: env.CHANGE_USER, password: env.CHANGE_PASSWORD || undefined, database: env.MYSQL_DB }).then(() => 'ok'));
    await probe('user variable after', () => c.query('select @cu').then(rows));
    await probe('temporary table after', () => c.query('select count(*) from cu_tmp').then(rows));
    await probe('database after', () => c.query('select database()').then(rows));
    await probe('prepare after', () => c.execute('select ? + 2 as n', [1]).then(rows));
    await probe('change user wrong password', () => c.changeUser({ user: env.CHANGE_USER, password: 'not-the-password', database: env.MYSQL_DB }).then(() => 'ok'));
    await probe('after wrong password', () => c.query('select 1').then(rows));
    await c.end().catch(() => {});
  }
  if (what.includes('infile')) {
    const file = path.join(os.tmpdir(), `qf_infile_${process.pid}.csv`);
    let text = '';
    for (let i = 0; i < 3000; i++) text += `${i},row é ${i}\n`;
    fs.writeFileSync(file, text);
    const c = await mysql.createConnection({ ...base, flags: ['+LOCAL_FILES'] });
    await probe('infile create', () => c.query('create table li (id int, s varchar(20))').then(rows));
    await probe('infile file', () => c.query({ sql: `load data local infile '${file}' into table li fields terminated by ',' (id, s)`, infileStreamFactory: (p) => fs.createReadStream(p) }).then(rows));
    await probe('infile count', () => c.query('select count(*), sum(id), max(s) from li').then(rows));
    await probe('infile stream', () => c.query({ sql: "load data local infile 'anything' into table li fields terminated by ','", infileStreamFactory: () => Readable.from(['1000000,a\n', '1000001,', 'b\n'].map((x) => Buffer.from(x))) }).then(rows));
    await probe('infile stream count', () => c.query('select count(*), max(id) from li').then(rows));
    await probe('infile big', () => c.query({ sql: "load data local infile 'big' into table li fields terminated by ','", infileStreamFactory: () => Readable.from((function* () { for (let i = 0; i < 100; i++) { let b = ''; for (let j = 0; j < 1000; j++) b += `${2000000 + i * 1000 + j},big\n`; yield Buffer.from(b); } })()) }).then(rows));
    await probe('infile big count', () => c.query("select count(*) from li where s = 'big'").then(rows));
    await probe('infile missing', () => c.query({ sql: "load data local infile '/nonexistent/file' into table li", infileStreamFactory: (p) => fs.createReadStream(p) }).then(rows));
    await probe('after missing', () => c.query('select count(*) from li').then(rows));
    await probe('infile in a transaction', () => c.query('begin').then(() => c.query({ sql: `load data local infile '${file}' into table li fields terminated by ',' (id, s)`, infileStreamFactory: (p) => fs.createReadStream(p) })).then(rows).finally(() => c.query('rollback')));
    await probe('after rollback', () => c.query('select count(*) from li').then(rows));
    await probe('infile warnings', () => c.query({ sql: "load data local infile 'w' into table li fields terminated by ','", infileStreamFactory: () => Readable.from([Buffer.from('x,far too long for twenty chars\n')]) }).then(rows));
    await c.end();
    const d = await mysql.createConnection({ ...base, flags: ['-LOCAL_FILES'] });
    await probe('infile without LOCAL_FILES', () => d.query({ sql: `load data local infile '${file}' into table li`, infileStreamFactory: (p) => fs.createReadStream(p) }).then(rows));
    await probe('after without', () => d.query('select 1').then(rows));
    await d.end();
    fs.unlinkSync(file);
  }
  if (what.includes('latin1')) {
    const c = await mysql.createConnection({ ...base, charset: 'LATIN1_SWEDISH_CI' });
    await probe('latin1 create', () => c.query('create table l1 (a varchar(20) character set latin1, u varchar(20) character set utf8mb4)').then(rows));
    await probe('latin1 insert', () => c.query('insert into l1 values (?, ?)', ['héllo ÿ', 'wörld']).then(rows));
    await probe('latin1 insert prepared', () => c.execute('insert into l1 values (?, ?)', ['ça va', 'æøå']).then(rows));
    await probe('latin1 select', () => c.query("select a, u, length(a), length(u), hex(a), hex(u), 'ça' from l1").then(rows));
    await probe('latin1 select prepared', () => c.execute("select a, u, ? from l1 where a like ?", ['ü', '%é%']).then(rows));
    await probe('latin1 variables', () => c.query('select @@character_set_client, @@character_set_results, @@collation_connection').then(rows));
    await probe('latin1 fields', () => c.query('select a, u from l1 limit 1').then(([, f]) => f.map((x) => [x.name, x.characterSet, x.columnType, x.columnLength])));
    await c.end();
  }
})().catch((e) => { console.error(e); process.exit(1); });
