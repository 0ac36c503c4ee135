// orm_sequelize.js: Sequelize 6 (its mysql dialect over mysql2) as an application uses it, against
// the server named by MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD and MYSQL_DB: sync({force})
// of models with a unique column, foreign keys and indexes, CRUD, a transaction rolled back and one
// committed, upserts, findOrCreate, increment, the introspection queryInterface reads
// (information_schema), migrations' addColumn / changeColumn / renameColumn / addIndex /
// removeIndex / addConstraint / removeConstraint, a second start's sync() and sync({alter}).
// Prints one line per step.
'use strict';
const { Sequelize, DataTypes, Op } = require('sequelize');

const env = process.env;

function models(sequelize) {
  const User = sequelize.define('User', {
    username: { type: DataTypes.STRING(64), unique: true, allowNull: false },
    name: DataTypes.STRING(100),
    score: { type: DataTypes.INTEGER, defaultValue: 0 },
  }, { tableName: 'sq_users', indexes: [{ fields: ['name'] }] });
  const Task = sequelize.define('Task', {
    title: { type: DataTypes.STRING(100), allowNull: false },
    done: { type: DataTypes.BOOLEAN, defaultValue: false },
    cost: DataTypes.DECIMAL(10, 2),
  }, { tableName: 'sq_tasks', indexes: [{ unique: true, fields: ['UserId', 'title'] }] });
  Task.belongsTo(User, { onDelete: 'CASCADE' });
  User.hasMany(Task);
  return { User, Task };
}

async function main() {
  const open = () => new Sequelize(env.MYSQL_DB, env.MYSQL_USER, env.MYSQL_PASSWORD, {
    host: env.MYSQL_HOST, port: Number(env.MYSQL_PORT), dialect: 'mysql',
    logging: env.SEQ_LOG ? console.log : false, pool: { max: 2 },
  });
  let sequelize = open();
  const qi = () => sequelize.getQueryInterface();
  const step = async (name, f) => {
    try {
      console.log(`${name}: ${await f()}`);
    } catch (e) {
      console.log(`${name}: error ${e.parent?.errno ?? ''} ${e.parent?.errno ? '' : e.message}`.trimEnd());
    }
  };
  const indexes = async (table) => {
    const list = await qi().showIndex(table);
    return JSON.stringify(list.map((i) => [i.name, i.unique, i.primary, i.fields.map((f) => f.attribute)])
      .sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  };
  const columns = async (table) => {
    const d = await qi().describeTable(table);
    return JSON.stringify(Object.keys(d).sort().map((k) => [k, d[k].type, d[k].allowNull, d[k].primaryKey, d[k].defaultValue]));
  };
  const references = async (table) => {
    const refs = await qi().getForeignKeyReferencesForTable(table);
    return JSON.stringify(refs.map((r) => [r.constraintName, r.tableName, r.columnName, r.referencedTableName, r.referencedColumnName])
      .sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  };
  let { User, Task } = models(sequelize);
  await step('sync', async () => { await sequelize.sync({ force: true }); return 'ok'; });
  await step('indexes users', () => indexes('sq_users'));
  await step('indexes tasks', () => indexes('sq_tasks'));
  await step('columns users', () => columns('sq_users'));
  await step('references tasks', () => references('sq_tasks'));
  await step('show tables', async () => JSON.stringify((await qi().showAllTables()).sort()));
  await step('create', async () => {
    const ann = await User.create({ username: 'ann', name: 'Ann' });
    const bob = await User.create({ username: 'bob', name: 'Bob' });
    await Task.bulkCreate([{ title: 'a', UserId: ann.id, cost: '1.50' }, { title: 'b', UserId: ann.id, done: true, cost: '2.25' }, { title: 'a', UserId: bob.id }]);
    return [ann.id, bob.id].join(',');
  });
  await step('duplicate', async () => { await User.create({ username: 'ann', name: 'Other' }); return 'saved'; });
  await step('orphan', async () => { await Task.create({ title: 'z', UserId: 999 }); return 'saved'; });
  await step('find', async () => {
    const us = await User.findAll({ include: Task, order: [['id', 'ASC'], [Task, 'title', 'ASC']] });
    return JSON.stringify(us.map((u) => [u.username, u.Tasks.map((t) => [t.title, t.done, t.cost])]));
  });
  await step('update', async () => {
    const [n] = await Task.update({ done: true }, { where: { title: 'a' } });
    return `${n} ${await Task.count({ where: { done: true } })}`;
  });
  await step('update same', async () => {
    const [n] = await Task.update({ done: true }, { where: { title: 'a' } });
    return `${n}`;
  });
  await step('where', async () => {
    const ts = await Task.findAll({ where: { title: { [Op.in]: ['a', 'b'] }, done: true, cost: { [Op.or]: [null, { [Op.gt]: 1 }] } }, order: [['id', 'ASC']] });
    return ts.map((t) => t.id).join(',');
  });
  await step('like and paging', async () => {
    const { count, rows } = await User.findAndCountAll({ where: { name: { [Op.like]: '%n%' } }, limit: 1, offset: 0, order: [['id', 'DESC']] });
    return `${count} ${rows.map((u) => u.username)}`;
  });
  await step('aggregate', async () => {
    const rows = await Task.findAll({ attributes: ['UserId', [sequelize.fn('COUNT', sequelize.col('id')), 'n'], [sequelize.fn('SUM', sequelize.col('cost')), 'total'], [sequelize.fn('AVG', sequelize.col('cost')), 'avg']], group: ['UserId'], order: [['UserId', 'ASC']], raw: true });
    return JSON.stringify(rows);
  });
  await step('increment', async () => {
    const ann = await User.findOne({ where: { username: 'ann' } });
    await ann.increment('score', { by: 5 });
    await ann.reload();
    return `${ann.score}`;
  });
  await step('upsert new', async () => {
    const [u, created] = await User.upsert({ username: 'cid', name: 'Cid' });
    return `${created} ${u.username}`;
  });
  await step('upsert existing', async () => {
    const [u, created] = await User.upsert({ id: 1, username: 'ann', name: 'Ann Two' });
    return `${created} ${(await User.findByPk(1)).name}`;
  });
  await step('bulk update on duplicate', async () => {
    await User.bulkCreate([{ id: 2, username: 'bob', name: 'Bobby' }, { username: 'dan', name: 'Dan' }], { updateOnDuplicate: ['name'] });
    return JSON.stringify((await User.findAll({ order: [['id', 'ASC']], raw: true })).map((u) => [u.id, u.username, u.name]));
  });
  await step('findOrCreate', async () => {
    const [u1, c1] = await User.findOrCreate({ where: { username: 'eve' }, defaults: { name: 'Eve' } });
    const [u2, c2] = await User.findOrCreate({ where: { username: 'eve' }, defaults: { name: 'Eve2' } });
    return `${c1} ${c2} ${u1.id === u2.id}`;
  });
  await step('transaction rolled back', async () => {
    try {
      await sequelize.transaction(async (t) => {
        await User.create({ username: 'fay', name: 'Fay' }, { transaction: t });
        await User.create({ username: 'ann', name: 'dup' }, { transaction: t });
      });
    } catch (e) {
      return `${e.parent?.errno} ${await User.count({ where: { username: 'fay' } })}`;
    }
    return 'committed';
  });
  await step('transaction committed', async () => {
    await sequelize.transaction(async (t) => {
      const g = await User.create({ username: 'gus', name: 'Gus' }, { transaction: t });
      await Task.create({ title: 'g', UserId: g.id }, { transaction: t });
      await g.update({ name: 'Gustav' }, { transaction: t });
    });
    return `${await User.count()} ${await Task.count()}`;
  });
  await step('lock', async () => sequelize.transaction(async (t) => {
    const u = await User.findOne({ where: { username: 'bob' }, lock: t.LOCK.UPDATE, transaction: t });
    return u.name;
  }));
  await step('destroy cascade', async () => {
    await User.destroy({ where: { username: 'bob' } });
    return `${await User.count()} ${await Task.count()}`;
  });
  await step('raw', async () => JSON.stringify(await sequelize.query('SELECT username, LENGTH(username) AS l FROM sq_users WHERE id > ? ORDER BY id LIMIT 2', { replacements: [2], type: Sequelize.QueryTypes.SELECT })));
  await sequelize.close();

  // A migration, as sequelize-cli's queryInterface runs it.
  sequelize = open();
  await step('createTable', async () => {
    await qi().createTable('sq_notes', {
      id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
      userId: { type: DataTypes.INTEGER, allowNull: false, references: { model: 'sq_users', key: 'id' }, onDelete: 'CASCADE', onUpdate: 'CASCADE' },
      body: { type: DataTypes.TEXT },
      createdAt: { type: DataTypes.DATE, allowNull: false, defaultValue: Sequelize.literal('CURRENT_TIMESTAMP') },
    });
    return 'ok';
  });
  await step('references notes', () => references('sq_notes'));
  await step('addColumn', async () => { await qi().addColumn('sq_notes', 'pinned', { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false }); return 'ok'; });
  await step('changeColumn', async () => { await qi().changeColumn('sq_notes', 'body', { type: DataTypes.STRING(500), allowNull: true }); return 'ok'; });
  await step('renameColumn', async () => { await qi().renameColumn('sq_notes', 'pinned', 'starred'); return 'ok'; });
  await step('addIndex', async () => { await qi().addIndex('sq_notes', ['userId', 'starred'], { name: 'sq_notes_user_starred' }); return 'ok'; });
  await step('addConstraint unique', async () => { await qi().addConstraint('sq_notes', { fields: ['body'], type: 'unique', name: 'sq_notes_body_uk' }); return 'ok'; });
  await step('indexes notes', () => indexes('sq_notes'));
  await step('columns notes', () => columns('sq_notes'));
  await step('insert notes', async () => {
    await sequelize.query("INSERT INTO sq_notes (userId, body) VALUES (1, 'x'), (1, 'y')");
    const [rows] = await sequelize.query('SELECT userId, body, starred FROM sq_notes ORDER BY id');
    return JSON.stringify(rows);
  });
  await step('duplicate body', async () => { await sequelize.query("INSERT INTO sq_notes (userId, body) VALUES (1, 'x')"); return 'saved'; });
  await step('removeConstraint unique', async () => { await qi().removeConstraint('sq_notes', 'sq_notes_body_uk'); return 'ok'; });
  await step('removeIndex', async () => { await qi().removeIndex('sq_notes', 'sq_notes_user_starred'); return 'ok'; });
  await step('indexes notes after', () => indexes('sq_notes'));
  await step('removeColumn', async () => { await qi().removeColumn('sq_notes', 'starred'); return 'ok'; });
  await step('drop referenced', async () => { await qi().dropTable('sq_users'); return 'dropped'; });
  await step('dropTable', async () => { await qi().dropTable('sq_notes'); return 'ok'; });
  await sequelize.close();

  // The application's second start: sync() finds every table and creates none; then alter.
  sequelize = open();
  ({ User, Task } = models(sequelize));
  await step('sync again', async () => { await sequelize.sync(); return 'ok'; });
  await step('indexes users again', () => indexes('sq_users'));
  await step('count', async () => `${await User.count()} ${await Task.count()}`);
  await step('sync alter', async () => { await sequelize.sync({ alter: true }); return 'ok'; });
  await step('indexes tasks after alter', () => indexes('sq_tasks'));
  await step('references tasks after alter', () => references('sq_tasks'));
  await step('columns tasks after alter', () => columns('sq_tasks'));
  await step('orphan after alter', async () => { await Task.create({ title: 'y', UserId: 999 }); return 'saved'; });
  await step('count after alter', async () => `${await User.count()} ${await Task.count()}`);
  await step('drop all', async () => { await sequelize.drop(); return JSON.stringify(await qi().showAllTables()); });
  await sequelize.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
