// One login through node-postgres: prints {"ok":VALUE} for select 40+2, or {"error":{code,message}}.
// usage: node login_probe.js URL [CA_FILE]   (with CA_FILE: TLS verified against it)
'use strict';
const fs = require('fs');
const { Client } = require('pg');

const [url, caFile] = process.argv.slice(2);

async function main() {
  const ssl = caFile ? { ca: fs.readFileSync(caFile, 'utf8'), rejectUnauthorized: true } : false;
  const client = new Client({ connectionString: url, ssl });
  try {
    await client.connect();
    const r = await client.query('select 40+2 as v');
    console.log(JSON.stringify({ ok: r.rows[0].v }));
  } catch (e) {
    console.log(JSON.stringify({ error: { code: e.code || '', message: e.message } }));
  } finally {
    await client.end().catch(() => {});
  }
}

main();
