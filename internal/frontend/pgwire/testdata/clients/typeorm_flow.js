// typeorm_flow.js URL: TypeORM (0.3, its PostgreSQL driver over node-postgres) as an application
// uses it: synchronize a schema (two entities, a foreign key, a unique column, jsonb), save,
// find with relations and conditions, the foreign key's check, a transaction, the query builder and a delete, then
// a second start over the schema (synchronize: no DDL, the rows kept) and a third with dropSchema over the tables and
// their foreign key. Prints what it read, one line each.
require('reflect-metadata');
const { DataSource, EntitySchema, MoreThan } = require('typeorm');

const Customer = new EntitySchema({
  name: 'Customer', tableName: 'to_customers',
  columns: {
    id: { type: Number, primary: true, generated: true },
    email: { type: String, unique: true },
    name: { type: String },
  },
});
const Order = new EntitySchema({
  name: 'Order', tableName: 'to_orders',
  columns: {
    id: { type: Number, primary: true, generated: true },
    qty: { type: 'int', default: 1 },
    price: { type: 'numeric', precision: 10, scale: 2 },
    meta: { type: 'jsonb', nullable: true },
    placed: { type: 'timestamptz', createDate: true },
  },
  relations: { customer: { type: 'many-to-one', target: 'Customer', joinColumn: true } },
});

(async () => {
  const options = { type: 'postgres', url: process.argv[2], entities: [Customer, Order], logging: !!process.env.TYPEORM_LOG };
  const ds = new DataSource({ ...options, synchronize: true, dropSchema: true });
  await ds.initialize();
  const customers = ds.getRepository('Customer');
  const orders = ds.getRepository('Order');
  const ann = await customers.save({ email: 'ann@example.com', name: 'Ann' });
  const bob = await customers.save({ email: 'bob@example.com', name: 'Bob' });
  await orders.save([{ qty: 2, price: '9.50', meta: { gift: true }, customer: ann }, { price: '20.00', customer: bob },
    { qty: 5, price: '1.25', customer: ann }]);
  const found = await orders.find({ where: { qty: MoreThan(1) }, relations: { customer: true }, order: { id: 'ASC' } });
  console.log('found', JSON.stringify(found.map((o) => [o.qty, o.price, o.meta, o.customer.name, o.placed instanceof Date])));
  try {
    await customers.save({ email: 'ann@example.com', name: 'Ann again' });
    console.log('duplicate saved');
  } catch (e) {
    console.log('duplicate refused', e.code);
  }
  try {
    await orders.save({ price: '1.00', customer: { id: 999 } });
    console.log('orphan saved');
  } catch (e) {
    console.log('orphan refused', e.code);
  }
  await ds.transaction(async (m) => {
    await m.getRepository('Order').increment({ customer: { id: ann.id } }, 'qty', 10);
  });
  const totals = await orders.createQueryBuilder('o').innerJoin('o.customer', 'c')
    .select('c.name', 'name').addSelect('SUM(o.qty)', 'qty').groupBy('c.name').orderBy('c.name').getRawMany();
  console.log('totals', JSON.stringify(totals.map((r) => [r.name, Number(r.qty)])));
  await orders.delete({ customer: { id: bob.id } });
  console.log('count', await orders.count(), await customers.count());
  await ds.destroy();
  // A second start over the same schema (synchronize, no dropSchema): TypeORM reads the tables
  // back (information_schema.columns, regtype, pg_constraint) and changes nothing, the rows kept.
  const ddl = [];
  const watch = { logQuery: (q) => { if (/^\s*(CREATE|ALTER|DROP)\b/i.test(q)) ddl.push(q); }, logQueryError() {}, logQuerySlow() {},
    logSchemaBuild() {}, logMigration() {}, log() {} };
  const again = new DataSource({ ...options, synchronize: true, logger: watch });
  await again.initialize();
  console.log('restart ddl', JSON.stringify(ddl));
  console.log('restart kept', await again.getRepository('Order').count(), await again.getRepository('Customer').count(),
    JSON.stringify((await again.getRepository('Order').find({ order: { id: 'ASC' } })).map((o) => [o.qty, o.price, o.meta])));
  await again.destroy();
  // A start with dropSchema over the tables and their foreign key: all dropped, created anew.
  const fresh = new DataSource({ ...options, synchronize: true, dropSchema: true });
  await fresh.initialize();
  console.log('fresh', await fresh.getRepository('Order').count(), await fresh.getRepository('Customer').count());
  await fresh.destroy();
})().catch((e) => {
  console.log("ERROR", process.env.TYPEORM_FLOW_DEBUG ? e.stack : e.message);
  process.exit(1);
});
