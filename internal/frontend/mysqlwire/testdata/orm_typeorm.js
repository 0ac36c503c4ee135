// orm_typeorm.js: TypeORM (0.3, its mysql driver over mysql2) as an application uses it, against
// the server named by MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD and MYSQL_DB:
// synchronize a schema (entities with a unique column, a many-to-one with onDelete CASCADE, an
// index, a json column), save, find with relations, upsert, the foreign key's check, a
// transaction, the query builder, a delete cascading, then a second start over the schema
// (synchronize reads it back through information_schema: the DDL it runs is printed; as the mysql
// driver it changes the nullable columns MariaDB says have the default 'NULL'), again as the
// mariadb driver, and a last with dropSchema. Prints what it read, one line each.
'use strict';
require('reflect-metadata');
const { DataSource, EntitySchema, MoreThan } = require('typeorm');

const Customer = new EntitySchema({
  name: 'Customer', tableName: 'to_customers',
  columns: {
    id: { type: Number, primary: true, generated: true },
    email: { type: 'varchar', length: 100, unique: true },
    name: { type: 'varchar', length: 50 },
  },
});
const Order = new EntitySchema({
  name: 'Order', tableName: 'to_orders',
  columns: {
    id: { type: Number, primary: true, generated: true },
    qty: { type: 'int', default: 1 },
    price: { type: 'decimal', precision: 10, scale: 2 },
    note: { type: 'varchar', length: 40, nullable: true },
    placed: { type: 'datetime', createDate: true },
  },
  indices: [{ name: 'IDX_to_orders_qty', columns: ['qty'] }],
  relations: { customer: { type: 'many-to-one', target: 'Customer', joinColumn: true, onDelete: 'CASCADE' } },
});

(async () => {
  const env = process.env;
  const options = { type: 'mysql', host: env.MYSQL_HOST, port: Number(env.MYSQL_PORT), username: env.MYSQL_USER,
    password: env.MYSQL_PASSWORD, database: env.MYSQL_DB, entities: [Customer, Order], logging: !!env.TYPEORM_LOG };
  const step = async (name, f) => {
    try {
      console.log(`${name}: ${await f()}`);
    } catch (e) {
      console.log(`${name}: error ${e.errno ?? e.message}`);
    }
  };
  const ds = new DataSource({ ...options, synchronize: true, dropSchema: true });
  await ds.initialize();
  const customers = ds.getRepository('Customer');
  const orders = ds.getRepository('Order');
  let ann, bob;
  await step('save', async () => {
    ann = await customers.save({ email: 'ann@example.com', name: 'Ann' });
    bob = await customers.save({ email: 'bob@example.com', name: 'Bob' });
    await orders.save([{ qty: 2, price: '9.50', customer: ann }, { price: '20.00', customer: bob }, { qty: 5, price: '1.25', customer: ann }]);
    return `${ann.id} ${bob.id}`;
  });
  await step('found', async () => {
    const found = await orders.find({ where: { qty: MoreThan(1) }, relations: { customer: true }, order: { id: 'ASC' } });
    return JSON.stringify(found.map((o) => [o.qty, o.price, o.customer.name, o.placed instanceof Date]));
  });
  await step('duplicate', async () => { await customers.save({ email: 'ann@example.com', name: 'Ann again' }); return 'saved'; });
  await step('orphan', async () => { await orders.save({ price: '1.00', customer: { id: 999 } }); return 'saved'; });
  await step('upsert', async () => {
    await customers.upsert([{ email: 'ann@example.com', name: 'Ann U' }, { email: 'cid@example.com', name: 'Cid' }], ['email']);
    return JSON.stringify((await customers.find({ order: { id: 'ASC' } })).map((c) => [c.id, c.name]));
  });
  await step('transaction', async () => {
    await ds.transaction(async (m) => {
      await m.getRepository('Order').increment({ customer: { id: ann.id } }, 'qty', 10);
    });
    const totals = await orders.createQueryBuilder('o').innerJoin('o.customer', 'c')
      .select('c.name', 'name').addSelect('SUM(o.qty)', 'qty').addSelect('AVG(o.price)', 'avg').groupBy('c.name').orderBy('c.name').getRawMany();
    return JSON.stringify(totals.map((r) => [r.name, Number(r.qty), r.avg]));
  });
  await step('rolled back', async () => {
    try {
      await ds.transaction(async (m) => {
        await m.getRepository('Customer').save({ email: 'dan@example.com', name: 'Dan' });
        await m.getRepository('Customer').save({ email: 'bob@example.com', name: 'Bob2' });
      });
    } catch (e) {
      return `${e.errno} ${await customers.count()}`;
    }
    return 'committed';
  });
  await step('update', async () => {
    const r = await orders.update({ qty: MoreThan(10) }, { note: 'big' });
    return `${r.affected}`;
  });
  await step('delete cascade', async () => {
    await customers.delete({ id: bob.id });
    return `${await orders.count()} ${await customers.count()}`;
  });
  await step('remove cascade', async () => {
    await customers.remove(await customers.findOneBy({ id: ann.id }));
    return `${await orders.count()} ${await customers.count()}`;
  });
  await ds.destroy();
  // A second start over the same schema: TypeORM reads the tables back (information_schema's
  // columns, statistics, key_column_usage, referential_constraints) and changes nothing.
  const ddl = [];
  const watch = { logQuery: (q) => { if (/^\s*(CREATE|ALTER|DROP)\b/i.test(q)) ddl.push(q); }, logQueryError() {}, logQuerySlow() {},
    logSchemaBuild() {}, logMigration() {}, log() {} };
  await step('restart', async () => {
    const again = new DataSource({ ...options, synchronize: true, logger: watch });
    await again.initialize();
    const n = `${await again.getRepository('Order').count()} ${await again.getRepository('Customer').count()}`;
    await again.destroy();
    return `${n} ${JSON.stringify(ddl)}`;
  });
  // and as TypeORM's mariadb driver reads it (MariaDB's quoted COLUMN_DEFAULT, 'NULL' for none)
  await step('restart as mariadb', async () => {
    ddl.length = 0;
    const again = new DataSource({ ...options, type: 'mariadb', synchronize: true, logger: watch });
    await again.initialize();
    const n = `${await again.getRepository('Order').count()} ${await again.getRepository('Customer').count()}`;
    await again.destroy();
    return `${n} ${JSON.stringify(ddl)}`;
  });
  await step('fresh', async () => {
    const fresh = new DataSource({ ...options, synchronize: true, dropSchema: true });
    await fresh.initialize();
    const n = `${await fresh.getRepository('Order').count()} ${await fresh.getRepository('Customer').count()}`;
    await fresh.destroy();
    return n;
  });
})().catch((e) => {
  console.log('ERROR', env.TYPEORM_FLOW_DEBUG ? e.stack : e.message);
  process.exit(1);
});
