// node-postgres against a connection budget: named statements until one is refused, then the
// connection's next statements. usage: node held_budget.js URL SIZE
'use strict';
const { Client } = require('pg');

const [url, sizeArg] = process.argv.slice(2);
const size = Number(sizeArg);

function padded(n) {
  const head = `SELECT ${n} /* `;
  return head + 'x'.repeat(size - head.length - 3) + ' */';
}

async function main() {
  const client = new Client({ connectionString: url });
  await client.connect();
  let made = 0;
  let refused = 'none';
  for (let i = 0; i < 10; i++) {
    try {
      await client.query({ name: `s${i}`, text: padded(i), rowMode: 'array' });
      made++;
    } catch (e) {
      refused = e.code;
      break;
    }
  }
  console.log(`case budget: ${refused} after ${made}`);
  const after = (await client.query({ text: 'select 40 + 2', rowMode: 'array' })).rows[0][0];
  const held = (await client.query({ name: 's0', text: padded(0), rowMode: 'array' })).rows[0][0];
  console.log(`case after: ${after} ${held}`);
  await client.end();
}

main().catch((e) => { console.log(`error: ${e.stack}`); process.exit(1); });
