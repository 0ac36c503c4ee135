// QueryFlux Studio: one page, hash routes, every number read from the admin JSON APIs through
// /studio/api (the session cookie is HttpOnly; the CSRF token lives only in this script's memory).
'use strict';

const state = { csrf: null, features: {}, timer: null, route: '', records: {} };
const $ = (id) => document.getElementById(id);

// el builds DOM nodes; text only ever goes through textContent, never HTML.
function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

function svg(tag, attrs, ...children) {
  const n = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
  for (const c of children) n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return n;
}

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function call(method, url, body, headers) {
  const h = Object.assign({}, headers || {});
  if (method !== 'GET') h['X-CSRF-Token'] = state.csrf || '';
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const r = await fetch(url, { method, headers: h, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (r.status === 401 && url !== 'login') { showLogin('Your session ended: log in again.'); }
  if (!r.ok) throw new APIError(r.status, (data && data.error) || (r.status + ' ' + r.statusText));
  return { data, etag: r.headers.get('ETag') };
}

// api calls an admin endpoint (path starting /admin/) through Studio's authenticated proxy.
async function api(method, path, body, headers) {
  return (await call(method, 'api' + path, body, headers)).data;
}

function ago(ts) {
  if (!ts) return '—';
  const s = Math.round((Date.now() - Date.parse(ts)) / 1000);
  if (s < 0) return 'in ' + (-s) + ' s';
  if (s < 120) return s + ' s ago';
  if (s < 7200) return Math.round(s / 60) + ' min ago';
  return Math.round(s / 3600) + ' h ago';
}

const badge = (text, cls) => el('span', { class: 'badge ' + (cls || text) }, text);

function table(headers, rows) {
  return el('table', {}, el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.length ? rows : [el('tr', {}, el('td', { colspan: headers.length, class: 'muted' }, 'none'))]));
}

// factTable is a two-column table of [name, value] pairs, without a header row.
const factTable = (pairs) => el('table', {}, el('tbody', {}, pairs.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v)))));

// barChart draws one horizontal bar per item; cap (optional) is a red outline at the limit.
function barChart(items, label) {
  const rowH = 22, w = 520, left = 150, max = Math.max(1, ...items.map((i) => Math.max(i.value, i.cap || 0)));
  const chart = svg('svg', { class: 'chart', width: w, height: items.length * rowH + 8, role: 'img', 'aria-label': label });
  items.forEach((it, k) => {
    const y = 4 + k * rowH, scale = (v) => ((w - left - 60) * v) / max;
    chart.append(svg('text', { x: 6, y: y + 14 }, it.name));
    chart.append(svg('rect', { class: 'track', x: left, y, width: w - left - 60, height: rowH - 6 }));
    chart.append(svg('rect', { class: 'bar', x: left, y, width: scale(it.value), height: rowH - 6 }));
    if (it.cap) chart.append(svg('rect', { class: 'cap', x: left, y, width: scale(it.cap), height: rowH - 6 }));
    chart.append(svg('text', { x: w - 54, y: y + 14 }, it.cap ? it.value + ' / ' + it.cap : String(it.value)));
  });
  return chart;
}

function confirmAction(text) {
  const d = $('confirm');
  $('confirm-text').textContent = text;
  return new Promise((resolve) => {
    const done = (ok) => () => { d.close(); $('confirm-yes').onclick = $('confirm-no').onclick = null; resolve(ok); };
    $('confirm-yes').onclick = done(true);
    $('confirm-no').onclick = done(false);
    d.showModal();
  });
}

// ---- pages ----

async function fleetPage(page) {
  const workers = await api('GET', '/admin/workers');
  const counts = { healthy: 0, stale: 0, evicted: 0 };
  for (const w of workers) counts[w.state] = (counts[w.state] || 0) + 1;
  const rows = workers.map((w) => {
    const hb = w.heartbeat || {}, cfg = hb.config || {}, health = hb.health || {};
    const flags = [];
    if (cfg.stale) flags.push('config stale');
    if (cfg.source && cfg.source !== 'controlPlane') flags.push('config from ' + cfg.source);
    return el('tr', { 'data-worker': w.name },
      el('td', {}, el('a', { class: 'row', href: '#/worker/' + encodeURIComponent(w.name) }, w.name)),
      el('td', {}, badge(w.state), w.online ? '' : el('span', { class: 'muted' }, ' offline')),
      el('td', {}, labelList(w.labels)),
      el('td', { class: 'groups' }, groupList(w.groups)),
      el('td', {}, w.version || '—'),
      el('td', {}, (w.revision || '—').slice(0, 12), ' ', badge(w.current ? 'current' : 'behind', w.current ? 'yes' : 'no')),
      el('td', {}, flags.join(', ') || '—'),
      el('td', {}, health.state || '—', health.loopLagSeconds ? ' (lag ' + (health.loopLagSeconds * 1000).toFixed(0) + ' ms)' : ''),
      el('td', { title: w.lastHeartbeat || '' }, ago(w.lastHeartbeat)),
      el('td', {}, (w.warnings || []).join('; ')));
  });
  page.replaceChildren(el('h1', {}, 'Fleet'),
    el('p', { class: 'muted' }, workers.length + ' workers · refreshes every 2 s'),
    barChart(Object.entries(counts).map(([name, value]) => ({ name, value })), 'workers by state'),
    table(['Worker', 'State', 'Labels', 'Groups served', 'Version', 'Config revision', 'Flags', 'Self-health', 'Last heartbeat', 'Warnings'], rows));
}

const labelList = (labels) => {
  const keys = Object.keys(labels || {}).sort();
  return keys.length ? keys.map((k) => el('span', { class: 'label' }, k + '=' + labels[k])) : el('span', { class: 'muted' }, 'none');
};

// groupList: the cluster groups in the worker's snapshot (what its labels select); none means it
// can route nothing.
const groupList = (groups) => (groups || []).length ? [...groups].sort().map((g) => el('span', { class: 'group' }, g)) : el('span', { class: 'muted' }, 'none');

async function workerPage(page, name) {
  const [w, hist] = await Promise.all([
    api('GET', '/admin/workers/' + encodeURIComponent(name)),
    api('GET', '/admin/queries?' + new URLSearchParams({ worker: name, limit: 20 })),
  ]);
  const hb = w.heartbeat || {}, cfg = hb.config || {}, co = hb.coordination || {}, hi = hb.history || {}, health = hb.health || {};
  const facts = [['State', badge(w.state)], ['Labels', labelList(w.labels)], ['Groups served', groupList(w.groups)], ['Version', w.version || '—'], ['Config revision', (w.revision || '—') + (w.current ? ' (current)' : ' (behind)')],
    ['Config source', (cfg.source || '—') + (cfg.stale ? ', stale for ' + Math.round(cfg.stalenessSecs) + ' s' : '')],
    ['Last config sync error', cfg.lastSyncError || '—'], ['Capacity coordination', [co.policy, co.mode].filter(Boolean).join(', ') || '—'],
    ['Self-health', (health.state || '—') + (health.loopLagSeconds ? ', loop lag ' + (health.loopLagSeconds * 1000).toFixed(0) + ' ms' : '')],
    ['History uplink', 'sent ' + (hi.sent || 0) + ', pending ' + (hi.pending || 0) + ', dropped ' + (hi.dropped || 0)],
    ['Frontends', (w.frontends || []).join(', ') || '—'], ['Registered', ago(w.registeredAt)], ['Last heartbeat', ago(w.lastHeartbeat)]];
  page.replaceChildren(el('h1', {}, 'Worker ', name),
  factTable(facts),
  el('h2', {}, 'Warnings'), el('ul', {}, (w.warnings || []).length ? w.warnings.map((x) => el('li', {}, x)) : el('li', { class: 'muted' }, 'none')),
  el('h2', {}, 'Recent queries'), queryTable(hist.records || []));
}

// ageOf is how long ago ts was, as a duration ("42 s", "3 min").
function ageOf(ts) {
  if (!ts) return '—';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  return s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h';
}

// perInterval turns a counter sampled over time into its increase per sample (0 across a restart).
const perInterval = (samples, key) => samples.slice(1).map((p, k) => ({ t: Date.parse(p.at), v: Math.max(0, p[key] - samples[k][key]) }));
const overTime = (samples, key) => samples.filter((p) => p[key] !== undefined && p[key] !== null).map((p) => ({ t: Date.parse(p.at), v: p[key] }));

// timeChart draws series ({name, cls, points: [{t, v}]}) over the sampled time; cap (optional)
// is a dashed red line; max (optional) fixes the top of the scale.
function timeChart(title, series, opts) {
  const o = opts || {}, w = 380, h = 140, left = 46, right = 10, top = 38, bottom = 18;
  const all = series.flatMap((s) => s.points);
  const chart = svg('svg', { class: 'chart small', width: w, height: h, role: 'img', 'aria-label': title });
  chart.append(svg('text', { x: 6, y: 14, class: 'title' }, title));
  if (!all.length) { chart.append(svg('text', { x: left, y: h / 2 }, 'no samples yet')); return chart; }
  const t0 = Math.min(...all.map((p) => p.t)), t1 = Math.max(...all.map((p) => p.t)), span = Math.max(1, t1 - t0);
  const max = o.max || niceCeil(Math.max(1, o.cap || 0, ...all.map((p) => p.v)));
  const x = (t) => left + ((w - left - right) * (t - t0)) / span, y = (v) => h - bottom - ((h - top - bottom) * v) / max;
  chart.append(svg('line', { class: 'axis', x1: left, x2: w - right, y1: h - bottom, y2: h - bottom }),
    svg('text', { x: left - 4, y: h - bottom, 'text-anchor': 'end' }, '0'),
    svg('text', { x: left - 4, y: top + 8, 'text-anchor': 'end' }, fmtNum(max)),
    svg('text', { x: left, y: h - 4 }, '−' + Math.round(span / 1000) + ' s'),
    svg('text', { x: w - right, y: h - 4, 'text-anchor': 'end' }, 'now'));
  if (o.cap) chart.append(svg('line', { class: 'cap', x1: left, x2: w - right, y1: y(o.cap), y2: y(o.cap) }));
  let lx = w - right;
  series.slice().reverse().forEach((s) => {
    if (!s.points.length) return;
    chart.append(svg('polyline', { class: 'line ' + s.cls, points: s.points.map((p) => x(p.t).toFixed(1) + ',' + y(p.v).toFixed(1)).join(' ') }));
    const last = s.points[s.points.length - 1];
    chart.append(svg('circle', { class: 'dot ' + s.cls, cx: x(last.t), cy: y(last.v), r: 2.5 }));
    const label = s.name + ' ' + fmtNum(last.v) + (s.unit || '');
    chart.append(svg('text', { x: lx, y: 29, 'text-anchor': 'end', class: 'legend ' + s.cls }, label));
    lx -= 7 * label.length + 10;
  });
  return chart;
}

// niceCeil is the smallest of 1, 2, 2.5, 5 times a power of ten that is at least v.
function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((x) => x >= v);
}

const fmtNum = (v) => (v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(v >= 10 ? 1 : 2));

async function capacityPage(page) {
  if (!state.features.leases) {
    page.replaceChildren(el('h1', {}, 'Capacity'), el('p', { class: 'muted' }, 'This node does not coordinate capacity leases (no /admin/leases).'));
    return;
  }
  const [stats, cfg] = await Promise.all([api('GET', '/admin/capacity/stats'), api('GET', '/admin/config').catch(() => null)]);
  const byName = {};
  for (const c of stats.clusters) byName[c.cluster] = c;
  for (const c of (cfg && cfg.snapshot && cfg.snapshot.clusters) || []) {
    if (!byName[c.name]) byName[c.name] = { cluster: c.name, cap: c.maxRunningQueries, now: { held: 0, revoked: 0, waiting: 0, granted: 0, denied: 0, fenced: 0, freedAfterGrace: 0 }, samples: [], workers: [], leases: [] };
    if (!byName[c.name].cap) byName[c.name].cap = c.maxRunningQueries;
  }
  const clusters = Object.keys(byName).sort().map((n) => byName[n]);
  const ms = (v) => (v === undefined || v === null ? '—' : fmtNum(v) + ' ms');
  const summary = clusters.map((c) => el('tr', { 'data-cluster': c.cluster }, el('td', {}, c.cluster),
    el('td', {}, c.now.held + (c.cap ? ' / ' + c.cap : '')), el('td', {}, c.now.revoked), el('td', {}, c.now.waiting),
    el('td', {}, ms(c.now.waitP99Millis)), el('td', {}, c.now.granted), el('td', {}, c.now.denied),
    el('td', {}, c.now.fenced), el('td', {}, c.now.freedAfterGrace),
    el('td', {}, c.now.fairness === undefined ? '—' : c.now.fairness.toFixed(2))));
  const every = stats.everyMillis ? 'sampled every ' + stats.everyMillis / 1000 + ' s by the control plane' : 'sampled on each refresh';
  const sections = clusters.map((c) => {
    const last = c.samples[c.samples.length - 1];
    const s = c.now.at && (!last || Date.parse(c.now.at) > Date.parse(last.at)) ? c.samples.concat([c.now]) : c.samples; // up to now
    if (!s.length) {
      return el('section', { class: 'cluster', 'data-cluster': c.cluster }, el('h2', {}, c.cluster),
        el('p', { class: 'muted' }, 'No lease asked for or held since the control plane started.'));
    }
    return el('section', { class: 'cluster', 'data-cluster': c.cluster }, el('h2', {}, c.cluster),
      el('div', { class: 'charts' },
        timeChart('Leases held' + (c.cap ? ' (cap ' + c.cap + ')' : ''), [{ name: 'held', cls: 's0', points: overTime(s, 'held') },
          { name: 'revoked', cls: 's2', points: overTime(s, 'revoked') }], { cap: c.cap }),
        timeChart('Acquires waiting (queue depth)', [{ name: 'waiting', cls: 's0', points: overTime(s, 'waiting') }]),
        timeChart('p99 wait for a lease, last minute (ms)', [{ name: 'p99', unit: ' ms', cls: 's1', points: overTime(s, 'waitP99Millis') }]),
        timeChart('Denials and fencing, per sample', [{ name: 'denied', cls: 's2', points: perInterval(s, 'denied') },
          { name: 'fenced', cls: 's1', points: perInterval(s, 'fenced') }, { name: 'after grace', cls: 's3', points: perInterval(s, 'freedAfterGrace') }]),
        timeChart("Fairness (Jain's index)", [{ name: 'index', cls: 's0', points: overTime(s, 'fairness') }], { max: 1 })),
      table(['Worker', 'Weight', 'Leases held', 'Granted (last minute)', 'Denied (last minute)'],
        c.workers.map((w) => el('tr', { 'data-share': c.cluster + '/' + w.worker }, el('td', {}, w.worker), el('td', {}, w.weight),
          el('td', {}, w.held), el('td', {}, w.granted), el('td', {}, w.denied)))));
  });
  const leases = clusters.flatMap((c) => c.leases);
  const rows = leases.map((l) => {
    const id = l.id; // <cluster>#<generation>, what revoke takes
    return el('tr', { 'data-lease': id }, el('td', {}, id), el('td', {}, l.cluster), el('td', {}, l.holder),
      el('td', { title: l.since }, ageOf(l.since)), el('td', { title: l.expiresAt }, ago(l.expiresAt)),
      el('td', {}, l.revoked ? badge('revoked', 'no') : badge('held', 'yes')),
      el('td', {}, l.revoked ? '' : el('button', { type: 'button', class: 'revoke', onclick: () => revoke(id) }, 'Revoke')));
  });
  page.replaceChildren(el('h1', {}, 'Capacity'),
    el('p', { class: 'muted' }, every + ' · refreshes every 2 s · grants, waits and fairness are this control plane\'s answers; leases held are every replica\'s'),
    barChart(clusters.map((c) => ({ name: c.cluster, value: c.now.held, cap: c.cap })), 'leases per cluster'),
    table(['Cluster', 'Held / cap', 'Revoked', 'Waiting', 'Wait p99', 'Granted', 'Denied', 'Fenced', 'Freed after grace', 'Fairness'], summary),
    el('h2', {}, 'Held leases'),
    table(['Lease', 'Cluster', 'Holder', 'Age', 'Expires', 'State', ''], rows),
    ...sections);
}

async function revoke(id) {
  if (!(await confirmAction('Revoke lease ' + id + '? Its query is stopped on the engine and the slot freed.'))) return;
  try {
    await api('POST', '/admin/leases/revoke', { lease: id });
    flash('Lease ' + id + ' revoked.');
  } catch (e) { flash('Revoking ' + id + ': ' + e.message, true); }
  render();
}

const queryFilters = ['worker', 'user', 'group', 'cluster', 'status'];
const windows = { '15m': 900, '1h': 3600, '1d': 86400 }; // seconds

// queryPage shows one query: every field of its history record, the routing trace in order.
async function queryPage(page, id) {
  let q = state.records[id];
  if (!q) {
    const hist = await api('GET', '/admin/queries?limit=500');
    q = (hist.records || []).find((r) => r.queryId === id);
  }
  if (!q) { page.replaceChildren(el('h1', {}, 'Query'), el('p', { class: 'muted' }, 'No query ' + id + ' in the recent history.')); return; }
  const fields = [['Query id', q.queryId], ['Status', badge(q.status)], ['Worker', q.worker], ['User', q.user], ['Protocol', q.protocol],
    ['Cluster group', q.group], ['Cluster', q.cluster], ['Started', q.startedAt], ['Ended', q.endedAt], ['Queued', q.queueMs + ' ms'],
    ['Executed', q.execMs + ' ms'], ['Rows', q.rows], ['Bytes', q.bytes], ['Cache hit', q.cacheHit ? 'yes' : 'no'],
    ['Error', q.error ? (q.errorCode ? q.errorCode + ': ' : '') + q.error : '—'], ['SQL (redacted)', el('code', {}, q.sql || q.sqlDigest || '—')]];
  page.replaceChildren(el('h1', {}, 'Query'), factTable(fields),
    el('h2', {}, 'Routing trace'), el('ol', { id: 'routing-trace' }, (q.routingTrace || []).length ? q.routingTrace.map((s) => el('li', {}, s)) : el('li', { class: 'muted' }, 'none recorded')));
}

function queryTable(records) {
  for (const q of records) state.records[q.queryId] = q;
  return table(['Started', 'Worker', 'User', 'Group', 'Cluster', 'Status', 'Queue ms', 'Exec ms', 'Rows', 'SQL (redacted)'],
    records.map((q) => el('tr', { 'data-query': q.queryId, title: (q.routingTrace || []).join(' → ') },
      el('td', { title: q.startedAt }, el('a', { class: 'row', href: '#/query/' + encodeURIComponent(q.queryId) }, ago(q.startedAt))), el('td', {}, q.worker), el('td', {}, q.user), el('td', {}, q.group),
      el('td', {}, q.cluster), el('td', { title: q.error || '' }, badge(q.status)), el('td', {}, q.queueMs), el('td', {}, q.execMs),
      el('td', {}, q.rows), el('td', { class: 'sql' }, q.sql || q.sqlDigest || ''))));
}

async function queriesPage(page, params) {
  const q = new URLSearchParams(params);
  if (!q.has('limit')) q.set('limit', '50');
  const win = q.get('window');
  q.delete('window'); // the page's own: the API takes an absolute since
  if (windows[win]) q.set('since', new Date(Date.now() - windows[win] * 1000).toISOString());
  const hist = await api('GET', '/admin/queries?' + q);
  const form = el('form', { class: 'filters', id: 'query-filters' },
    queryFilters.filter((f) => f !== 'status').map((f) => el('input', { name: f, placeholder: f, value: q.get(f) || '' })),
    el('select', { name: 'status' }, ['', 'succeeded', 'failed', 'cancelled', 'rejected'].map((s) =>
      el('option', { value: s, selected: q.get('status') === s }, s || 'any status'))),
    el('select', { name: 'window' }, [['', 'any time'], ['15m', 'last 15 min'], ['1h', 'last hour'], ['1d', 'last day']].map(([v, text]) =>
      el('option', { value: v, selected: (win || '') === v }, text))),
    el('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) next.set(k, v);
    location.hash = '#/queries?' + next;
  });
  const more = hist.next ? el('a', { class: 'row', href: '#/queries?' + new URLSearchParams(Object.assign(Object.fromEntries(q), { before: hist.next })) }, 'older →') : null;
  page.replaceChildren(el('h1', {}, 'Queries'), form, queryTable(hist.records || []), more || '');
}

async function configPage(page) {
  const [{ data: cur, etag }, workers] = await Promise.all([call('GET', 'api/admin/config'), api('GET', '/admin/workers')]);
  const current = workers.filter((w) => w.current).length;
  const parts = [el('h1', {}, 'Config'),
    el('p', {}, 'Current revision ', el('code', { id: 'current-revision' }, cur.revision), ' · ',
      (cur.snapshot.clusters || []).length + ' clusters, ' + (cur.snapshot.clusterGroups || []).length + ' groups'),
    el('h2', {}, 'Rollout'),
    barChart([{ name: 'on current', value: current, cap: workers.length }], 'workers on the current revision'),
    table(['Worker', 'Revision', ''], workers.map((w) => el('tr', {}, el('td', {}, w.name), el('td', {}, (w.revision || '—').slice(0, 12)),
      el('td', {}, badge(w.current ? 'current' : 'behind', w.current ? 'yes' : 'no')))))];
  if (state.features.configHistory) {
    const hist = await api('GET', '/admin/config/history?limit=20');
    parts.push(el('h2', {}, 'Stored revisions'), table(['Id', 'Revision', 'Note', 'Clusters', 'Groups', 'Users', 'Stored', ''],
      hist.revisions.map((r) => el('tr', { 'data-revision': r.id }, el('td', {}, r.id), el('td', {}, r.revision.slice(0, 12)),
        el('td', {}, r.note), el('td', {}, r.clusters), el('td', {}, r.groups), el('td', {}, r.users), el('td', {}, ago(r.createdAt)),
        el('td', {}, r.revision === cur.revision ? badge('current', 'yes')
          : [el('button', { type: 'button', class: 'diff', onclick: () => showDiff(r.id) }, 'Diff with current'), ' ',
            el('button', { type: 'button', class: 'rollback', onclick: () => rollback(r, etag) }, 'Roll back to this')])))),
      el('div', { id: 'config-diff' }));
  } else {
    parts.push(el('p', { class: 'muted' }, 'This node keeps no configuration history (its configuration comes from a file).'));
  }
  if (state.features.configRejections) {
    const rej = await api('GET', '/admin/config/rejections?limit=20');
    parts.push(el('h2', {}, 'Refused edits'), rej.rejections.length === 0 ? el('p', { class: 'muted' }, 'No edit has been refused.')
      : table(['Id', 'Refused', 'Source', 'Reason'], rej.rejections.map((r) => el('tr', { 'data-rejection': r.id },
        el('td', {}, r.id), el('td', {}, ago(r.createdAt)), el('td', {}, r.source), el('td', {}, el('pre', { class: 'reason' }, r.reason))))));
  }
  page.replaceChildren(...parts);
}

// showDiff lists what changed from stored revision id to the served one, secrets hidden.
async function showDiff(id) {
  const box = $('config-diff');
  try {
    const d = await api('GET', '/admin/config/diff?' + new URLSearchParams({ from: String(id) }));
    const lines = d.lines.map((l) => el('span', { class: { '-': 'del', '+': 'add', '@': 'hunk' }[l[0]] || 'ctx' }, l + '\n'));
    box.replaceChildren(el('h2', {}, 'Changes from ' + d.from.id + ' to ' + d.to.id + ' (current)'),
      d.changed ? el('pre', { class: 'diff' }, ...lines) : el('p', { class: 'muted' }, 'No change.'));
  } catch (e) { flash('Diff: ' + e.message, true); }
}

async function rollback(r, etag) {
  if (!(await confirmAction('Roll the configuration back to revision ' + r.id + ' (' + r.revision.slice(0, 12) + ')?'))) return;
  try {
    await api('POST', '/admin/config/rollback?' + new URLSearchParams({ to: String(r.id) }), undefined, etag ? { 'If-Match': etag } : {});
    flash('Rolled back to revision ' + r.id + '.');
  } catch (e) { flash('Rollback: ' + e.message, true); }
  render();
}

// planningPage picks or uploads a scenario, starts a small sweep on the server (one job at a
// time) and follows it: a progress bar while it runs, then the plot and the knee.
async function planningPage(page) {
  if (!state.features.planning) {
    page.replaceChildren(el('h1', {}, 'Planning'), el('p', { class: 'muted' }, 'This node does not run planning jobs.'));
    return;
  }
  const [builtins, last] = await Promise.all([call('GET', 'api/plan/scenarios'), call('GET', 'api/plan/jobs')]);
  const list = builtins.data || [];
  const about = el('p', { class: 'muted', id: 'plan-about' });
  const pick = el('select', { name: 'scenario', id: 'plan-scenario' }, el('option', { value: '' }, 'upload a scenario…'),
    list.map((sc, k) => el('option', { value: sc.name, selected: k === 0 }, sc.name + ' (' + sc.workers + ' workers, ' + sc.duration + ')')));
  const upload = el('div', { id: 'plan-upload', hidden: true },
    el('input', { type: 'file', accept: '.yaml,.yml', id: 'plan-file', onchange: (ev) => {
      const f = ev.target.files[0];
      if (f) f.text().then((text) => { $('plan-yaml').value = text; });
    } }),
    el('textarea', { id: 'plan-yaml', rows: 10, cols: 90, placeholder: 'scenario YAML (with a workload: section)', spellcheck: 'false' }));
  const showAbout = () => {
    const sc = list.find((x) => x.name === pick.value);
    upload.hidden = !!sc;
    about.textContent = sc ? sc.about + (sc.objective ? ' Objective: ' + sc.objective + '.' : '') + ' Clusters: ' + sc.clusters.join(', ') + '.' : 'Paste or choose a scenario file; it may not replay a file.';
  };
  pick.addEventListener('change', showAbout);
  const form = el('form', { id: 'plan-form', class: 'filters' }, pick,
    el('input', { name: 'sweep', id: 'plan-sweep', value: 'cap=1,2,4', size: 24, title: 'workers=FROM..TO[:STEP], cap=V1,V2,... or cap.CLUSTER=...' }),
    el('input', { name: 'sweep2', id: 'plan-sweep2', placeholder: 'second sweep (optional)', size: 24 }),
    el('select', { name: 'seeds', id: 'plan-seeds' }, [1, 2, 3].map((n) => el('option', { value: n }, n + (n === 1 ? ' seed' : ' seeds')))),
    el('button', { type: 'submit' }, 'Run sweep'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const req = { sweep: [$('plan-sweep').value, $('plan-sweep2').value].map((x) => x.trim()).filter(Boolean), seeds: Number($('plan-seeds').value) };
    if (pick.value) req.scenario = pick.value; else req.yaml = $('plan-yaml').value;
    try {
      const { data } = await call('POST', 'api/plan/jobs', req);
      flash('');
      followJob(data.id);
    } catch (e) { flash('Planning: ' + e.message, true); }
  });
  page.replaceChildren(el('h1', {}, 'Planning'),
    el('p', { class: 'muted' }, 'Runs a small qfsim plan sweep here, one job at a time (at most 12 runs; larger sweeps: qfsim plan).'),
    form, about, upload, el('div', { id: 'plan-job' }));
  showAbout();
  if (last.data) { showJob(last.data); if (last.data.state === 'running') followJob(last.data.id); }
}

function followJob(id) {
  stopTimer();
  const poll = async () => {
    try {
      const { data } = await call('GET', 'api/plan/jobs/' + encodeURIComponent(id));
      if (!$('plan-job')) { stopTimer(); return; }
      showJob(data);
      if (data.state !== 'running') stopTimer();
    } catch (e) { stopTimer(); flash('Planning: ' + e.message, true); }
  };
  state.timer = setInterval(poll, 700);
  poll();
}

function showJob(job) {
  const box = $('plan-job');
  if (!box) return;
  const parts = [el('h2', {}, 'Job: ' + job.scenario),
    el('p', {}, el('progress', { id: 'plan-progress', max: job.total || 1, value: job.done }), ' ',
      el('span', { id: 'plan-state' }, job.state + ' · ' + job.done + ' of ' + job.total + ' runs' + (job.ended ? ' · took ' + Math.round((Date.parse(job.ended) - Date.parse(job.started)) / 1000) + ' s' : '')))];
  if (job.error) parts.push(el('pre', { class: 'reason error', id: 'plan-error' }, job.error));
  if (job.state === 'done' && job.plan) {
    const knees = job.plan.knees || [];
    parts.push(el('h2', {}, 'Knee'), el('ul', { id: 'plan-knees' }, knees.length ? knees.map((k) => el('li', {},
      Object.entries(k.fixed || {}).map(([a, v]) => a + '=' + v + ': ').join(''), k.value ? el('strong', {}, k.axis + ' = ' + k.value) : 'none', ' — ' + k.reason))
      : el('li', { class: 'muted' }, 'no knee'), (job.plan.warnings || []).map((w) => el('li', { class: 'error' }, w))),
    el('img', { id: 'plan-plot', src: 'api/plan/jobs/' + encodeURIComponent(job.id) + '/plot.svg', alt: 'plan plot' }),
    el('pre', { class: 'plan-table' }, job.table || ''));
  }
  box.replaceChildren(...parts);
}

// ---- shell ----

function flash(text, isError) {
  const s = $('status');
  s.className = isError ? 'error' : 'muted';
  s.textContent = text;
}

function showLogin(message) {
  state.csrf = null;
  stopTimer();
  $('page').hidden = true; $('nav').hidden = true; $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('token').focus();
}

function stopTimer() { if (state.timer) { clearInterval(state.timer); state.timer = null; } }

const routes = { fleet: fleetPage, capacity: capacityPage, queries: queriesPage, config: configPage, worker: workerPage, query: queryPage, planning: planningPage };

async function render() {
  if (!state.csrf) return;
  const [path, query] = (location.hash.replace(/^#\/?/, '') || 'fleet').split('?');
  const [name, ...rest] = path.split('/');
  const fn = routes[name] || fleetPage;
  const arg = name === 'worker' || name === 'query' ? decodeURIComponent(rest.join('/')) : new URLSearchParams(query || '');
  const route = location.hash;
  if (route !== state.route) { stopTimer(); state.route = route; $('status').textContent = ''; }
  document.querySelectorAll('nav a').forEach((a) => a.classList.toggle('active', a.dataset.page === ({ worker: 'fleet', query: 'queries' }[name] || (routes[name] ? name : 'fleet'))));
  $('login').hidden = true; $('page').hidden = false; $('nav').hidden = false; $('logout').hidden = false;
  const page = $('page');
  try {
    await fn(page, arg);
    page.dataset.loaded = name;
  } catch (e) {
    if (!(e instanceof APIError && e.status === 401)) flash(e.message, true);
  }
  if ((fn === fleetPage || fn === capacityPage) && !state.timer) state.timer = setInterval(() => { if (!document.hidden) render(); }, 2000);
}

async function start() {
  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const { data } = await call('POST', 'login', { token: $('token').value });
      $('token').value = '';
      await loggedIn(data);
    } catch (e) {
      $('login-error').textContent = e.message;
    }
  });
  $('logout').addEventListener('click', async () => {
    try { await call('POST', 'logout'); } catch (e) { /* the session is gone either way */ }
    showLogin('Logged out.');
  });
  window.addEventListener('hashchange', render);
  const { data } = await call('GET', 'session');
  if (data.loggedIn) await loggedIn(data); else showLogin();
}

async function loggedIn(sess) {
  state.csrf = sess.csrf;
  state.features = sess.features || {};
  $('nav-planning').hidden = !state.features.planning;
  state.route = '';
  await render();
}

start();
