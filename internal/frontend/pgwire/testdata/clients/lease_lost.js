// node-postgres running a statement whose capacity lease is lost: the error's code as the
// application's retry logic reads it (err.code), then the connection's next statement.
// usage: node lease_lost.js URL SQL
'use strict';
const { Client } = require('pg');

const [url, sql] = process.argv.slice(2);

async function main() {
  const client = new Client({ connectionString: url });
  await client.connect();
  console.log('case started: yes');
  try {
    await client.query(sql);
    console.log('case lost: none');
  } catch (e) {
    console.log(`case lost: ${e.code} ${e.severity}`);
    console.log(`message: ${e.message}`);
  }
  const after = (await client.query({ text: 'select 40 + 2', rowMode: 'array' })).rows[0][0];
  console.log(`case after: ${after}`);
  await client.end();
}

main().catch((e) => { console.log(`error: ${e.stack}`); process.exit(1); });
