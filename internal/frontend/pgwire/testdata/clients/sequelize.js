// Sequelize (with node-postgres) through the proxy as an application uses it: connect (which
// sends SET client_min_messages TO warning; SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE),
// authenticate, sync a model, create a row, find it. One "case NAME: RESULT" line each.
// usage: node sequelize.js URL TABLE
'use strict';
const { Sequelize, DataTypes } = require('sequelize');

const [url, table] = process.argv.slice(2);

async function main() {
  const sequelize = new Sequelize(url, { dialect: 'postgres', logging: process.env.SEQ_LOG ? console.log : false, pool: { max: 2 } });
  const step = async (name, f) => {
    try {
      console.log(`case ${name}: ${await f()}`);
    } catch (e) {
      console.log(`case ${name}: error ${e.parent?.code ?? ''} ${e.message}`);
    }
  };
  await step('authenticate', async () => { await sequelize.authenticate(); return 'ok'; });
  const Note = sequelize.define('Note', { body: DataTypes.STRING, at: DataTypes.DATE }, { tableName: table });
  await step('sync', async () => { await Note.sync({ force: true }); return 'ok'; });
  await step('create', async () => {
    const n = await Note.create({ body: 'hello', at: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)) });
    return n.id;
  });
  await step('findAll', async () => {
    const rows = await Note.findAll({ order: [['id', 'ASC']] });
    return rows.map((r) => `${r.id}|${r.body}|${r.at.toISOString()}|${r.createdAt instanceof Date}`).join(';');
  });
  await step('timezone', async () => {
    const [rows] = await sequelize.query("select current_setting('TimeZone') as tz");
    return rows[0].tz;
  });
  await sequelize.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
