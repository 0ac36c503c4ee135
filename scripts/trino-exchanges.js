// trino-exchanges.js URL USER N: runs N statements of SQL (default SELECT 1) one after another
// through the npm trino-client, after 20 to warm up, and prints the HTTP requests the client
// sent per statement (its POST, its GETs of nextUri), counted where the client sends them.
// Run with NODE_PATH naming the node_modules that hold trino-client (scripts/trino-exchanges.sh).
const { Trino, BasicAuth } = require('trino-client');

async function main() {
  const [server, user, n] = process.argv.slice(2);
  const sql = process.env.SQL || 'SELECT 1';
  const trino = Trino.create({ server, source: 'trino-exchanges', auth: new BasicAuth(user) });
  let requests = 0;
  const send = trino.client.request.bind(trino.client);
  trino.client.request = (cfg) => {
    requests++;
    return send(cfg);
  };
  const one = async () => {
    const rows = [];
    for await (const r of await trino.query(sql)) {
      if (r.error) throw new Error(r.error.message);
      rows.push(...(r.data || []));
    }
    if (rows.length !== 1) throw new Error(`rows ${JSON.stringify(rows)}, want one`);
  };
  for (let i = 0; i < 20; i++) await one();
  requests = 0;
  for (let i = 0; i < Number(n); i++) await one();
  console.log((requests / Number(n)).toFixed(3));
}

main().catch((e) => {
  console.error('trino-exchanges.js:', e.message);
  process.exit(1);
});
