// knex_flow.js URL: Knex (its pg client) as an application's schema and data use it: migrations
// (createTable with increments, a foreign key, an index and a unique column; then an alterTable
// adding a column and an index), a seed, queries (a join, a group, an update, a transaction), and
// knex.migrate.rollback of each migration. Prints one line per step: its name and what it read,
// or the error's SQLSTATE.
'use strict';
const knexFactory = require('knex');

const migrations = {
  '001_users_posts': {
    up: async (knex) => {
      await knex.schema.createTable('kx_users', (t) => {
        t.increments('id');
        t.string('email').notNullable().unique();
        t.string('name');
        t.timestamps(true, true);
      });
      await knex.schema.createTable('kx_posts', (t) => {
        t.increments('id');
        t.integer('user_id').references('id').inTable('kx_users');
        t.string('title').notNullable();
        t.text('body');
        t.index(['title']);
      });
    },
    down: async (knex) => {
      await knex.schema.dropTable('kx_posts');
      await knex.schema.dropTable('kx_users');
    },
  },
  '002_likes': {
    up: (knex) => knex.schema.alterTable('kx_posts', (t) => {
      t.integer('likes').notNullable().defaultTo(0);
      t.index(['user_id', 'likes'], 'kx_posts_user_likes');
    }),
    down: (knex) => knex.schema.alterTable('kx_posts', (t) => {
      t.dropIndex(['user_id', 'likes'], 'kx_posts_user_likes');
      t.dropColumn('likes');
    }),
  },
};

const migrationSource = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};

const seedSource = {
  getSeeds: async () => ['users'],
  getSeed: async () => ({
    seed: async (knex) => {
      await knex('kx_posts').del();
      await knex('kx_users').del();
      const ids = await knex('kx_users').insert([{ email: 'ann@example.com', name: 'Ann' }, { email: 'bob@example.com', name: 'Bob' }], ['id']);
      await knex('kx_posts').insert([
        { user_id: ids[0].id, title: 'hello', body: 'first' },
        { user_id: ids[0].id, title: 'again', body: 'second', likes: 3 },
        { user_id: ids[1].id, title: 'hi', body: null },
      ]);
    },
  }),
};

(async () => {
  const knex = knexFactory({ client: 'pg', connection: process.argv[2], pool: { min: 0, max: 2 },
    migrations: { migrationSource }, seeds: { seedSource } });
  const step = async (name, f) => {
    try {
      console.log(`${name}: ${await f()}`);
    } catch (e) {
      console.log(`${name}: error ${e.code ?? e.message}`);
    }
  };
  // Each migration its own batch, as two deployments run them.
  await step('up', async () => JSON.stringify(await knex.migrate.up()));
  await step('latest', async () => JSON.stringify(await knex.migrate.latest()));
  await step('columns', async () => JSON.stringify(Object.entries(await knex('kx_posts').columnInfo())
    .map(([k, v]) => [k, v.nullable]).sort()));
  await step('seed', async () => JSON.stringify(await knex.seed.run()));
  await step('join', async () => JSON.stringify(await knex('kx_posts as p').join('kx_users as u', 'u.id', 'p.user_id')
    .select('u.name', 'p.title', 'p.likes').orderBy('p.id')));
  await step('group', async () => JSON.stringify(await knex('kx_posts').select('user_id').count('* as n').sum('likes as likes')
    .groupBy('user_id').orderBy('user_id')));
  await step('update', async () => knex('kx_posts').where('title', 'like', 'h%').increment('likes', 2));
  await step('duplicate', async () => knex('kx_users').insert({ email: 'ann@example.com', name: 'Ann again' }));
  await step('orphan', async () => knex('kx_posts').insert({ user_id: 99, title: 'x' }));
  await step('transaction', async () => {
    await knex.transaction(async (trx) => {
      const [u] = await trx('kx_users').insert({ email: 'cy@example.com', name: 'Cy' }, ['id']);
      await trx('kx_posts').insert({ user_id: u.id, title: 'cy' });
    });
    return JSON.stringify(await knex('kx_posts').where({ title: 'cy' }).first('title', 'likes'));
  });
  await step('rolled back', async () => {
    try {
      await knex.transaction(async (trx) => {
        await trx('kx_users').insert({ email: 'dee@example.com', name: 'Dee' });
        throw new Error('no');
      });
    } catch (e) { /* the rollback */ }
    return (await knex('kx_users').count('* as n').first()).n;
  });
  await step('rollback', async () => JSON.stringify(await knex.migrate.rollback()));
  await step('after rollback', async () => `${await knex.schema.hasColumn('kx_posts', 'likes')} ${(await knex('kx_posts').count('* as n').first()).n}`);
  await step('rollback all', async () => JSON.stringify(await knex.migrate.rollback(undefined, true)));
  await step('tables', async () => `${await knex.schema.hasTable('kx_users')} ${await knex.schema.hasTable('kx_posts')} ${await knex.schema.hasTable('knex_migrations')}`);
  await knex.destroy();
})().catch((e) => { console.log('fatal', e.message); process.exit(1); });
