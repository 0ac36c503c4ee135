// Runs "select 40+2" (or TRINO_QUERY) through the npm trino-client against TRINO_SERVER
// (http:// or https://) with BasicAuth(TRINO_USER[, TRINO_PASSWORD]) and, for https, TRINO_CA as
// the only trusted root. Prints one JSON line: {"ok": rows} (with TRINO_QUERY also "types", the
// columns' types) or {"error": message}.
const fs = require('fs');
const { Trino, BasicAuth } = require('trino-client');

async function main() {
  const pw = process.env.TRINO_PASSWORD;
  const options = {
    server: process.env.TRINO_SERVER,
    catalog: 'demo',
    auth: pw ? new BasicAuth(process.env.TRINO_USER, pw) : new BasicAuth(process.env.TRINO_USER),
  };
  if (process.env.TRINO_CA) {
    options.ssl = { ca: fs.readFileSync(process.env.TRINO_CA), rejectUnauthorized: true };
  }
  const iter = await Trino.create(options).query(process.env.TRINO_QUERY || 'select 40+2');
  const rows = [];
  let types;
  for await (const r of iter) {
    if (r.error) throw new Error(r.error.message);
    if (r.columns) types = r.columns.map((c) => c.type);
    rows.push(...(r.data || []));
  }
  return process.env.TRINO_QUERY ? { ok: rows, types } : { ok: rows };
}

main().then(
  (res) => console.log(JSON.stringify(res)),
  (e) => console.log(JSON.stringify({ error: String((e.response && e.response.status) || '') + ' ' + e.message })),
);
