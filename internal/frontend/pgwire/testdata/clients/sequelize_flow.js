// sequelize_flow.js URL: Sequelize (6, its postgres dialect over node-postgres) as an
// application's schema uses it: sync({force: true}) of two models with a unique column, a
// foreign key and indexes (plain, unique, on two columns), creates, a duplicate and an orphan
// refused, finds with an include, an update, then the application's second start (sync() of the
// same models), and the indexes and columns Sequelize reads back, then a third with sync({alter:
// true}). Prints one line per step.
'use strict';
const { Sequelize, DataTypes, Op } = require('sequelize');

const url = process.argv[2];

function models(sequelize) {
  const User = sequelize.define('User', {
    username: { type: DataTypes.STRING, unique: true, allowNull: false },
    name: DataTypes.STRING,
  }, { tableName: 'sq_users', indexes: [{ fields: ['name'] }] });
  const Task = sequelize.define('Task', {
    title: { type: DataTypes.STRING, allowNull: false },
    done: { type: DataTypes.BOOLEAN, defaultValue: false },
  }, { tableName: 'sq_tasks', indexes: [{ unique: true, fields: ['UserId', 'title'] }] });
  Task.belongsTo(User);
  User.hasMany(Task);
  return { User, Task };
}

async function main() {
  const open = () => new Sequelize(url, { dialect: 'postgres', logging: process.env.SEQ_LOG ? console.log : false, pool: { max: 2 } });
  let sequelize = open();
  const step = async (name, f) => {
    try {
      console.log(`${name}: ${await f()}`);
    } catch (e) {
      console.log(`${name}: error ${e.parent?.code ?? e.message}`);
    }
  };
  const indexes = async (table) => {
    const qi = sequelize.getQueryInterface();
    const list = await qi.showIndex(table);
    return JSON.stringify(list.map((i) => [i.name, i.unique, i.primary, i.fields.map((f) => f.attribute)])
      .sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  };
  const columns = async (table) => {
    const d = await sequelize.getQueryInterface().describeTable(table);
    return JSON.stringify(Object.keys(d).sort().map((k) => [k, d[k].allowNull, d[k].primaryKey]));
  };
  let { User, Task } = models(sequelize);
  await step('sync', async () => { await sequelize.sync({ force: true }); return 'ok'; });
  await step('indexes users', () => indexes('sq_users'));
  await step('indexes tasks', () => indexes('sq_tasks'));
  await step('create', async () => {
    const ann = await User.create({ username: 'ann', name: 'Ann' });
    const bob = await User.create({ username: 'bob', name: 'Bob' });
    await Task.bulkCreate([{ title: 'a', UserId: ann.id }, { title: 'b', UserId: ann.id, done: true }, { title: 'a', UserId: bob.id }]);
    return [ann.id, bob.id].join(',');
  });
  await step('duplicate', async () => { await User.create({ username: 'ann', name: 'Other' }); return 'saved'; });
  await step('orphan', async () => { await Task.create({ title: 'z', UserId: 999 }); return 'saved'; });
  await step('find', async () => {
    const us = await User.findAll({ include: Task, order: [['id', 'ASC'], [Task, 'title', 'ASC']] });
    return JSON.stringify(us.map((u) => [u.username, u.Tasks.map((t) => [t.title, t.done])]));
  });
  await step('update', async () => {
    const [n] = await Task.update({ done: true }, { where: { title: 'a' } });
    return `${n} ${await Task.count({ where: { done: true } })}`;
  });
  await step('where', async () => {
    const ts = await Task.findAll({ where: { title: { [Op.in]: ['a', 'b'] }, done: true }, order: [['id', 'ASC']] });
    return ts.map((t) => t.id).join(',');
  });
  await sequelize.close();

  // The application's second start: sync() finds every table and index and creates none.
  sequelize = open();
  ({ User, Task } = models(sequelize));
  await step('sync again', async () => { await sequelize.sync(); return 'ok'; });
  await step('indexes users again', () => indexes('sq_users'));
  await step('columns users', () => columns('sq_users'));
  await step('columns tasks', () => columns('sq_tasks'));
  await step('count', async () => `${await User.count()} ${await Task.count()}`);
  await sequelize.close();

  // A start with sync({alter: true}): every column altered to what it is, every foreign key
  // dropped and added again, the rows kept.
  sequelize = open();
  ({ User, Task } = models(sequelize));
  await step('sync alter', async () => { await sequelize.sync({ alter: true }); return 'ok'; });
  await step('columns tasks after alter', () => columns('sq_tasks'));
  await step('orphan after alter', async () => { await Task.create({ title: 'y', UserId: 999 }); return 'saved'; });
  await step('count after alter', async () => `${await User.count()} ${await Task.count()} ${await Task.count({ where: { done: true } })}`);
  await sequelize.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
