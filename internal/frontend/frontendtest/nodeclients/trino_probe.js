// Runs TRINO_STEPS (a JSON array of {"name", "sql", "cancel"?}) in order through one npm
// trino-client against TRINO_SERVER as TRINO_USER, so that session state the server hands back
// (prepared statements, session properties) carries from step to step, as in an application.
// TRINO_CATALOG and TRINO_SCHEMA, when set, are the client's catalog and schema; TRINO_HEADERS,
// when set, a JSON object of fields the client sends with every request (its extraHeaders).
// Prints one JSON line per step: {"probe": name, "ok": {"rows", "names", "types", "pages"}} or
// {"probe": name, "error": {"message", "errorName", "errorType", "errorCode", "errorLocation"}}.
// A step with "cancel": true cancels its query (Trino.cancel, a DELETE of /v1/query/{id}) as
// soon as its first rows arrive, and prints {"ok": {"cancelled": id, "read": rows read}}. A step
// with "exit": true prints {"ok": {"read": rows read}} then and ends the process, telling the
// server nothing: a client that goes away.
const { Trino, BasicAuth } = require('trino-client');

async function step(trino, s) {
  const iter = await trino.query(s.sql);
  const rows = [];
  let types;
  let names;
  let pages = 0;
  for await (const r of iter) {
    pages++;
    if (r.error) {
      const e = r.error;
      return { error: { message: e.message, errorName: e.errorName, errorType: e.errorType, errorCode: e.errorCode, errorLocation: e.errorLocation } };
    }
    if (r.columns) {
      types = r.columns.map((c) => c.type);
      names = r.columns.map((c) => c.name);
    }
    rows.push(...(r.data || []));
    if (s.cancel && rows.length > 0) {
      await trino.cancel(r.id);
      return { ok: { cancelled: r.id, read: rows.length } };
    }
    if (s.exit && rows.length > 0) {
      console.log(JSON.stringify({ probe: s.name, ok: { read: rows.length } }));
      process.exit(0);
    }
  }
  return { ok: { rows, names, types, pages } };
}

async function main() {
  const trino = Trino.create({
    server: process.env.TRINO_SERVER,
    source: 'queryflux-probe',
    auth: new BasicAuth(process.env.TRINO_USER),
    catalog: process.env.TRINO_CATALOG || undefined,
    schema: process.env.TRINO_SCHEMA || undefined,
    extraHeaders: JSON.parse(process.env.TRINO_HEADERS || '{}'),
  });
  for (const s of JSON.parse(process.env.TRINO_STEPS)) {
    let out;
    try {
      out = await step(trino, s);
    } catch (e) {
      out = { error: { message: String((e.response && e.response.status) || '') + ' ' + e.message } };
    }
    console.log(JSON.stringify({ probe: s.name, ...out }));
  }
}

main().catch((e) => {
  console.log(JSON.stringify({ probe: 'main', error: { message: e.message } }));
  process.exitCode = 1;
});
