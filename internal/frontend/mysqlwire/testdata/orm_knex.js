// orm_knex.js: Knex (its mysql2 client) as an application's schema and data use it, against the
// server named by MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD and MYSQL_DB: migrations
// (createTable with increments, foreign keys with onDelete, an index, a unique column; an
// alterTable adding a column and an index, renaming a column, dropping a foreign key), a seed,
// queries (a join, a group, an upsert with onConflict().merge(), an update, a transaction, a
// delete cascading), hasTable / hasColumn, and knex.migrate.rollback of each migration. Prints
// one line per step: its name and what it read, or the error's number.
'use strict';
const knexFactory = require('knex');

const migrations = {
  '001_users_posts': {
    up: async (knex) => {
      await knex.schema.createTable('kx_users', (t) => {
        t.increments('id');
        t.string('email', 100).notNullable().unique();
        t.string('name', 50);
        t.timestamps(true, true);
      });
      await knex.schema.createTable('kx_posts', (t) => {
        t.increments('id');
        t.integer('user_id').unsigned().references('id').inTable('kx_users').onDelete('CASCADE');
        t.string('title', 100).notNullable();
        t.text('body');
        t.index(['title']);
      });
      await knex.schema.createTable('kx_tags', (t) => {
        t.increments('id');
        t.integer('post_id').unsigned().references('kx_posts.id').onDelete('SET NULL');
        t.string('tag', 20);
        t.unique(['post_id', 'tag']);
      });
    },
    down: async (knex) => {
      await knex.schema.dropTable('kx_tags');
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
  '003_rename': {
    up: (knex) => knex.schema.alterTable('kx_tags', (t) => {
      t.renameColumn('tag', 'label');
    }),
    down: (knex) => knex.schema.alterTable('kx_tags', (t) => {
      t.renameColumn('label', 'tag');
    }),
  },
};

const migrationSource = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};

async function main() {
  const env = process.env;
  const knex = knexFactory({
    client: 'mysql2',
    connection: { host: env.MYSQL_HOST, port: Number(env.MYSQL_PORT), user: env.MYSQL_USER, password: env.MYSQL_PASSWORD, database: env.MYSQL_DB },
    pool: { min: 0, max: 2 },
    migrations: { migrationSource, tableName: 'kx_migrations' },
  });
  const step = async (name, f) => {
    try {
      console.log(`${name}: ${await f()}`);
    } catch (e) {
      console.log(`${name}: error ${e.errno ?? e.message}`);
    }
  };
  await step('migrate', async () => {
    const [batch, log] = await knex.migrate.latest();
    return `${batch} ${log.join(',')}`;
  });
  await step('has', async () => [await knex.schema.hasTable('kx_posts'), await knex.schema.hasTable('nothere'),
    await knex.schema.hasColumn('kx_posts', 'likes'), await knex.schema.hasColumn('kx_tags', 'label')].join(','));
  await step('seed', async () => {
    const [ann] = await knex('kx_users').insert({ email: 'ann@example.com', name: 'Ann' });
    const [bob] = await knex('kx_users').insert({ email: 'bob@example.com', name: 'Bob' });
    await knex('kx_posts').insert([
      { user_id: ann, title: 'hello', body: 'first' },
      { user_id: ann, title: 'again', body: 'second', likes: 3 },
      { user_id: bob, title: 'hi', body: null },
    ]);
    await knex('kx_tags').insert([{ post_id: 1, label: 'x' }, { post_id: 1, label: 'y' }, { post_id: 3, label: 'x' }]);
    return `${ann} ${bob}`;
  });
  await step('duplicate email', () => knex('kx_users').insert({ email: 'ann@example.com' }).then(() => 'saved'));
  await step('orphan', () => knex('kx_posts').insert({ user_id: 99, title: 'z' }).then(() => 'saved'));
  await step('join', async () => JSON.stringify(await knex('kx_posts as p').join('kx_users as u', 'u.id', 'p.user_id')
    .select('u.name', 'p.title', 'p.likes').orderBy('p.id')));
  await step('group', async () => JSON.stringify(await knex('kx_posts').select('user_id').count('* as n').sum('likes as likes')
    .groupBy('user_id').orderBy('user_id')));
  await step('upsert', async () => {
    await knex('kx_users').insert([{ email: 'ann@example.com', name: 'Ann B' }, { email: 'cid@example.com', name: 'Cid' }])
      .onConflict('email').merge(['name']);
    return JSON.stringify(await knex('kx_users').select('id', 'email', 'name').orderBy('id'));
  });
  await step('ignore', async () => {
    await knex('kx_users').insert({ email: 'cid@example.com', name: 'Other' }).onConflict('email').ignore();
    return (await knex('kx_users').count('* as n'))[0].n;
  });
  await step('update', async () => {
    const n = await knex('kx_posts').where('title', 'like', 'h%').increment('likes', 2);
    return `${n} ${JSON.stringify(await knex('kx_posts').pluck('likes').orderBy('id'))}`;
  });
  await step('transaction', async () => {
    try {
      await knex.transaction(async (trx) => {
        await trx('kx_posts').insert({ user_id: 1, title: 'in tx' });
        await trx('kx_posts').insert({ user_id: 99, title: 'orphan' });
      });
    } catch (e) {
      return `rolled back ${e.errno} ${(await knex('kx_posts').count('* as n'))[0].n}`;
    }
    return 'committed';
  });
  await step('delete cascade', async () => {
    const n = await knex('kx_users').where('name', 'Bob').del();
    return `${n} ${(await knex('kx_posts').count('* as n'))[0].n} ${JSON.stringify(await knex('kx_tags').select('post_id', 'label').orderBy('id'))}`;
  });
  await step('delete set null', async () => {
    const n = await knex('kx_posts').where('title', 'hello').del();
    return `${n} ${JSON.stringify(await knex('kx_tags').select('post_id', 'label').orderBy('id'))}`;
  });
  await step('delete cascade in transaction', async () => {
    await knex.transaction(async (trx) => {
      await trx('kx_posts').insert({ user_id: 1, title: 'late' });
      await trx('kx_users').where('id', 1).del();
    });
    return `${(await knex('kx_users').count('* as n'))[0].n} ${(await knex('kx_posts').count('* as n'))[0].n}`;
  });
  await step('drop foreign', async () => {
    await knex.schema.alterTable('kx_tags', (t) => { t.dropForeign('post_id'); });
    await knex('kx_tags').insert({ post_id: 77, label: 'free' });
    return (await knex('kx_tags').count('* as n'))[0].n;
  });
  await step('rollback', async () => {
    const [batch, log] = await knex.migrate.rollback(undefined, true);
    return `${batch} ${log.join(',')}`;
  });
  await step('tables after', async () => JSON.stringify((await knex('information_schema.tables').select('table_name as t')
    .where('table_schema', knex.raw('database()')).whereIn('table_name', ['kx_users', 'kx_posts', 'kx_tags', 'kx_migrations'])
    .orderBy('table_name')).map((r) => r.t)));
  await knex.destroy();
}

main().catch((e) => { console.error(e); process.exit(1); });
