// delay-relay console: plain JS over the relay actuator endpoint. Data is always put in the page as text
// (textContent), never as HTML. The ops token lives in sessionStorage: entered once per browser session.
// Listings show message bodies (a plain-ZADD member is the message), so they need the token as writes do; every
// write asks first in an in-page dialog that names how many entries it touches (window.confirm is easy to click
// through and cannot require typing the business name before "purge all").
'use strict';

const API = document.querySelector('meta[name="relay-endpoint"]').content;
const TOKEN_KEY = 'delay-relay-ops-token';
const TOKEN_HEADER = 'X-Relay-Token';
const REFRESH_MS = 5000;
const WINDOW_MS = 60000;

const state = {
  tab: 'overview',
  overview: null,
  // per business: readings of this instance's relayed count and lag histogram, for rates over the last minute
  samples: {},
};

// ---------- helpers ----------

const $ = (sel) => document.querySelector(sel);
const $$ = (sel) => Array.from(document.querySelectorAll(sel));

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  Object.entries(attrs || {}).forEach(([k, v]) => {
    if (v === undefined || v === null || v === false) return;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.substring(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  });
  children.flat().forEach((c) => {
    if (c === undefined || c === null) return;
    node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  });
  return node;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

async function call(method, path, body) {
  const headers = {};
  if (token()) headers[TOKEN_HEADER] = token();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(API + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
  });
  let json = null;
  try { json = await response.json(); } catch (e) { /* not JSON */ }
  if (!response.ok) {
    const message = json && json.error ? json.error : response.status + ' ' + response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return json;
}

function notify(text, isError) {
  const box = $('#notice');
  box.textContent = text;
  box.className = 'notice' + (isError ? ' error' : '');
  box.hidden = false;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { box.hidden = true; }, isError ? 12000 : 6000);
}

const fmt = new Intl.NumberFormat('en-US');
function count(n) { return n === undefined || n === null ? '—' : fmt.format(n); }

function duration(ms) {
  if (ms === undefined || ms === null) return '—';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  // floor, not round, for the second unit: 239.6 s is 3m 59s, never "3m 60s"
  if (s < 3600) return Math.floor(s / 60) + 'm ' + Math.floor(s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
}

// 2026-11-23 09:14:06 in the browser's time zone: sortable, no AM/PM
function localTime(d) {
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + p(d.getHours()) + ':' +
    p(d.getMinutes()) + ':' + p(d.getSeconds());
}

// a dead letter's reason without the attempt count, which has its own column
function bareReason(reason) { return (reason || '').replace(/(\s*\(due: [^)]*\))?\s*\(attempts: \d+\)$/, ''); }

function when(ms) {
  if (ms === undefined || ms === null) return el('span', { class: 'muted' }, '—');
  const d = new Date(ms);
  // a foreign producer may score in seconds or nanoseconds: show the raw score, never break the table
  if (!Number.isFinite(d.getTime())) return el('span', { class: 'muted', title: 'not a time in epoch ms' }, 'score ' + String(ms));
  const delta = ms - Date.now();
  const relative = Math.abs(delta) < 1000 ? 'now' : delta > 0 ? 'in ' + duration(delta) : duration(-delta) + ' ago';
  return el('span', { title: d.toISOString() }, localTime(d), el('div', { class: 'sub' }, relative));
}

function num(n, cls) {
  return el('td', { class: 'num' + (n === 0 ? ' zero' : '') + (cls && n > 0 ? ' ' + cls : '') }, count(n));
}

// ---------- token ----------

function renderToken() {
  const has = !!token();
  document.body.classList.toggle('operator', has);
  $('#token-form').hidden = has;
  $('#token-state').hidden = !has;
  $('#token-forget').hidden = !has;
  if (!has) $('#token-state').textContent = 'operator';
}

// the overview names the operator whose token this tab holds
function renderOperator(name) {
  if (name && token()) $('#token-state').textContent = 'operator: ' + name;
}

$('#token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const value = $('#token-input').value.trim();
  if (!value) return;
  sessionStorage.setItem(TOKEN_KEY, value);
  $('#token-input').value = '';
  renderToken();
  refreshTab();
});

$('#token-forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  renderToken();
  refreshTab();
});

// ---------- overview ----------

function rememberSample(name, local) {
  if (!local || local.relayed === undefined) return;
  const list = state.samples[name] || (state.samples[name] = []);
  const now = Date.now();
  list.push({ at: now, relayed: local.relayed, buckets: local.lagBuckets || [] });
  while (list.length > 2 && now - list[1].at >= WINDOW_MS) list.shift();
}

// share of confirmed messages within the objective's on-time bound, from the lag histogram's bucket at that bound
// (the relay adds one there): [upper bound ms, cumulative count] pairs, after minus before
function onTimeShare(after, before, onTimeMs) {
  const at = (buckets) => { const b = (buckets || []).find((x) => x[0] === onTimeMs); return b ? b[1] : null; };
  const hit = at(after);
  if (hit === null) return null;
  const last = after[after.length - 1][1] - (before && before.length ? before[before.length - 1][1] : 0);
  const within = hit - (before && before.length ? at(before) || 0 : 0);
  return last > 0 ? within / last : null;
}

// on time over the last minute of this instance, else since it started (a quiet minute has no share of its own)
function onTime(b) {
  const list = state.samples[b.name] || [];
  const onTimeMs = b.config.sloOnTimeMs;
  let share = null;
  if (list.length >= 2) share = onTimeShare(list[list.length - 1].buckets, list[0].buckets, onTimeMs);
  if (share === null && b.local && b.local.lagBuckets) share = onTimeShare(b.local.lagBuckets, null, onTimeMs);
  return share;
}

function onTimeCell(b) {
  const share = onTime(b);
  const target = b.config.sloTarget;
  const title = 'this instance: share confirmed within ' + duration(b.config.sloOnTimeMs) + ' of due (objective ' +
    (target * 100).toFixed(2).replace(/\.?0+$/, '') + ' %), over the last minute or since start';
  if (share === null) return el('td', { class: 'num', title }, '—');
  const text = (Math.floor(share * 10000) / 100).toFixed(2) + ' %';
  return el('td', { class: 'num nowrap' + (share < target ? ' dead-count' : ''), 'data-field': 'on-time', title }, text);
}

// relayed per minute and lag p99 of this instance between the oldest kept reading (about a minute ago) and now
function rates(name) {
  const list = state.samples[name] || [];
  if (list.length < 2) return { perMinute: null, p99: null };
  const first = list[0];
  const last = list[list.length - 1];
  const minutes = (last.at - first.at) / 60000;
  const perMinute = minutes > 0 ? (last.relayed - first.relayed) / minutes : null;
  const deltas = last.buckets.map((b, i) => [b[0], b[1] - ((first.buckets[i] || [0, 0])[1])]);
  const total = last.relayed - first.relayed;
  let p99 = null;
  if (total > 0) {
    const wanted = total * 0.99;
    const hit = deltas.find((b) => b[1] >= wanted);
    p99 = hit ? '≤ ' + duration(hit[0]) : '> ' + duration(deltas.length ? deltas[deltas.length - 1][0] : 0);
  }
  return { perMinute, p99 };
}

function stateCell(b) {
  const pills = [];
  if (!b.running) pills.push(el('span', { class: 'pill bad' }, 'stopped'));
  else if (b.paused) {
    const p = b.pause || {};
    const by = p.operator ? 'by ' + (p.by || 'operator') : p.config ? 'by configuration' : '';
    pills.push(el('span', { class: 'pill warn', title: p.at ? 'since ' + new Date(p.at).toISOString() : '' },
      'paused' + (by ? ' ' + by : '')));
  } else pills.push(el('span', { class: 'pill ok' }, 'relaying'));
  if (b.config && b.config.maxRate > 0) {
    // the fleet-wide cap: with entries due, the due backlog is what the cap holds back
    const due = b.backlog && b.backlog.due > 0;
    pills.push(el('span', {
      class: 'pill ' + (due ? 'warn' : 'info') + ' gap', 'data-field': 'cap',
      title: 'max-rate: the whole fleet publishes at most ' + fmt.format(b.config.maxRate) + ' messages/s' +
        (due ? '; the due backlog waits for the cap' : ''),
    }, 'capped at ' + fmt.format(b.config.maxRate) + '/s'));
  }
  const td = el('td', {}, pills);
  if (state.overview && state.overview.writeEnabled) {
    // Resume lifts only an operator's pause: a business paused by configuration stays paused until its config says so
    const operator = !!(b.pause && b.pause.operator);
    // (the pill of a business paused only by configuration says so: no button then)
    if (operator || !b.paused) {
      td.appendChild(el('button', {
        class: 'write gap',
        onclick: () => act(b.name, operator ? 'resume' : 'pause', undefined, { question: (operator ? 'Resume ' : 'Pause ') + b.name + ' on every relay instance?' }),
      }, operator ? 'Resume' : 'Pause'));
    }
  }
  return td;
}

function renderOverview(data) {
  state.overview = data;
  const businesses = Object.values(data.businesses || {});
  const engine = $('#engine-state');
  engine.textContent = data.running ? 'engine running' : 'engine stopped';
  engine.className = 'pill ' + (data.running ? 'ok' : 'bad');

  const total = { due: 0, scheduled: 0, cold: 0, inflight: 0, dead: 0, perMinute: 0, oldest: 0 };
  const rows = businesses.map((b) => {
    rememberSample(b.name, b.local);
    const backlog = b.backlog || {};
    const r = rates(b.name);
    ['due', 'scheduled', 'cold', 'inflight', 'dead'].forEach((k) => { total[k] += backlog[k] || 0; });
    total.perMinute += r.perMinute || 0;
    total.oldest = Math.max(total.oldest, backlog.oldestOverdueMs || 0);
    const instances = Array.isArray(b.instances) ? b.instances.length : null;
    const draining = b.scanWidth > b.shards ? b.shards + ' / ' + b.scanWidth : String(b.shards);
    return el('tr', { 'data-business': b.name },
      el('td', {}, el('strong', {}, b.name), el('div', { class: 'sub' }, b.config.exchange + ' → ' + b.config.routingKey)),
      stateCell(b),
      backlog.error ? el('td', { colspan: 6, class: 'dead-count' }, backlog.error) : null,
      backlog.error ? null : num(backlog.due),
      backlog.error ? null : num(backlog.scheduled),
      backlog.error ? null : el('td', { class: 'num' + (backlog.cold ? '' : ' zero'), 'data-field': 'cold' }, count(backlog.cold)),
      backlog.error ? null : num(backlog.inflight),
      backlog.error ? null : el('td', { class: 'num' + (backlog.dead ? ' dead-count' : ' zero'), 'data-field': 'dead' }, count(backlog.dead)),
      backlog.error ? null : el('td', { class: 'num' }, backlog.oldestOverdueMs ? duration(backlog.oldestOverdueMs) : '—'),
      el('td', { class: 'num' }, r.perMinute === null ? '—' : fmt.format(Math.round(r.perMinute))),
      el('td', { class: 'num' }, r.p99 || '—'),
      onTimeCell(b),
      el('td', { class: 'num', title: b.scanWidth > b.shards ? 'retired shards still draining' : '' }, draining),
      el('td', { class: 'num' }, instances === null ? '—' : String(instances)));
  });
  const body = $('#overview tbody');
  body.replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: 13, class: 'empty' }, 'No business configured.'))]));

  const tile = (label, value, cls) => el('div', { class: 'tile ' + (cls || '') },
    el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
  $('#tiles').replaceChildren(
    tile('Businesses', String(businesses.length)),
    tile('Due now', count(total.due), total.due > 0 ? 'warn' : ''),
    tile('Scheduled', count(total.scheduled)),
    tile('Cold', count(total.cold)),
    tile('In flight', count(total.inflight)),
    tile('Dead letters', count(total.dead), total.dead > 0 ? 'bad' : ''),
    tile('Oldest overdue', total.oldest ? duration(total.oldest) : '—', total.oldest > 60000 ? 'warn' : ''));

  renderBusinessSelects(businesses.map((b) => b.name));
  renderInstances(businesses);
  renderOperator(data.operator);
  $('#footer').textContent = 'Updated ' + localTime(new Date()) +
    (data.writeEnabled ? '' : ' · listings and writes are disabled on this relay (no operator token configured)');
}

function renderBusinessSelects(names) {
  $$('.business-select').forEach((select) => {
    const current = select.value;
    const same = select.options.length === names.length && names.every((n, i) => select.options[i].value === n);
    if (!same) {
      select.replaceChildren(...names.map((n) => el('option', { value: n }, n)));
      if (names.includes(current)) select.value = current;
    }
  });
}

function renderInstances(businesses) {
  const rows = [];
  businesses.forEach((b) => {
    if (!Array.isArray(b.instances)) {
      rows.push(el('tr', {}, el('td', {}, b.name), el('td', { colspan: 6, class: 'muted' }, '— (this relay reports no instances)')));
      return;
    }
    b.instances.forEach((i) => rows.push(el('tr', {},
      el('td', {}, b.name), el('td', { class: 'member' }, i.id || '—'), el('td', {}, i.host || '—'),
      el('td', {}, i.version || '—'), el('td', {}, when(i.startedAt)), el('td', {}, when(i.lastSeen)),
      el('td', { class: (i.seat || '').startsWith('given up') ? 'warn' : '' }, i.seat || '—'))));
  });
  $('#instances tbody').replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: 7, class: 'empty' }, 'No instances.'))]));
}

async function loadOverview() {
  try {
    renderOverview(await call('GET', ''));
  } catch (e) {
    notify('Cannot read the relay endpoint: ' + e.message, true);
  }
}

// ---------- scheduled ----------

function payloadCell(item, bodies) {
  if (!bodies) return el('td', { class: 'payload muted' }, 'unlock with the ops token to see bodies');
  if (item.payload === null || item.payload === undefined) return el('td', { class: 'payload muted' }, '(the member is the message)');
  return el('td', { class: 'payload' }, item.payload);
}

function selected(table) {
  return $$('#' + table + ' tbody input[type=checkbox]:checked').map((c) => c.value);
}

// a listing refused (401: no token in this tab, 403: none configured on the relay) says why, in place of rows
function lockedRow(e, colspan) {
  const text = e.status === 403
    ? 'Listings are disabled on this relay: no operator token is configured (they show message bodies).'
    : 'Entries and dead letters show message bodies: unlock with an operator token to see them.';
  return el('tr', {}, el('td', { colspan, class: 'empty locked-listing' }, text));
}

// a member with its reference (the one audit log lines print instead of the member)
function memberCell(item) {
  return el('td', { class: 'member' }, item.member, item.ref ? el('div', { class: 'sub' }, item.ref) : null);
}

function plural(n, one, many) { return fmt.format(n) + ' ' + (n === 1 ? one : many); }

// a table shows the answer to the latest request only: an earlier, slower answer must not overwrite it
const latest = { scheduled: 0, dead: 0 };

async function loadScheduled() {
  const business = $('#scheduled-business').value;
  if (!business) return;
  const request = ++latest.scheduled;
  const params = new URLSearchParams({ limit: $('#scheduled-limit').value || '50' });
  const search = $('#scheduled-search').value.trim();
  if (search) params.set('search', search);
  try {
    const data = await call('GET', '/' + encodeURIComponent(business) + '/peek?' + params);
    if (request !== latest.scheduled) return;
    const rows = data.entries.map((e) => el('tr', { 'data-member': e.member },
      el('td', { class: 'check' }, el('input', { type: 'checkbox', value: e.member, class: 'write', 'aria-label': 'select' })),
      memberCell(e),
      el('td', { class: 'num' }, String(e.shard)),
      el('td', { class: 'when' }, when(e.dueAtMs),
        e.cold ? el('span', { class: 'pill cold gap', title: 'in the cold tier: a compressed block, brought back to its shard ahead of its due time' }, 'cold') : null),
      payloadCell(e, data.bodies),
      el('td', { class: 'actions' },
        el('button', { class: 'write', onclick: () => act(business, 'deliver-now', { member: e.member }, { question: 'Deliver 1 entry of ' + business + ' now, before it is due?', detail: e.member }, loadScheduled) }, 'Deliver now'),
        ' ',
        el('button', { class: 'write danger', onclick: () => act(business, 'cancel', { member: e.member }, { question: 'Cancel 1 entry of ' + business + '? It will not be delivered.', detail: e.member }, loadScheduled) }, 'Cancel'))));
    if (data.partial) rows.push(partialRow(6));
    $('#scheduled tbody').replaceChildren(...(rows.length ? rows
      : [el('tr', {}, el('td', { colspan: 6, class: 'empty' }, search ? 'Nothing scheduled matches "' + search + '".' : 'Nothing scheduled.'))]));
  } catch (e) {
    if (e.status === 401 || e.status === 403) $('#scheduled tbody').replaceChildren(lockedRow(e, 6));
    else notify('Cannot read scheduled entries: ' + e.message, true);
  }
}

$('#scheduled-form').addEventListener('submit', (e) => { e.preventDefault(); loadScheduled(); });
$('#scheduled-business').addEventListener('change', loadScheduled);
$('#scheduled-now-selected').addEventListener('click', () => {
  const members = selected('scheduled');
  const business = $('#scheduled-business').value;
  if (members.length) act(business, 'deliver-now', { members: members.join('\n') }, { question: 'Deliver ' + plural(members.length, 'entry', 'entries') + ' of ' + business + ' now, before they are due?' }, loadScheduled);
});
$('#scheduled-cancel-selected').addEventListener('click', () => {
  const members = selected('scheduled');
  const business = $('#scheduled-business').value;
  if (members.length) act(business, 'cancel', { members: members.join('\n') }, { question: 'Cancel ' + plural(members.length, 'entry', 'entries') + ' of ' + business + '? They will not be delivered.' }, loadScheduled);
});

function partialRow(colspan) {
  return el('tr', {}, el('td', { colspan, class: 'empty' }, 'Partial: the relay stopped reading at its bound (entries, bytes or time). Narrow the search.'));
}

// ---------- dead letters ----------

async function loadDead() {
  const business = $('#dead-business').value;
  if (!business) return;
  const request = ++latest.dead;
  const params = new URLSearchParams({ limit: $('#dead-limit').value || '100' });
  const reason = $('#dead-reason').value;
  if (reason) params.set('reason', reason);
  try {
    const data = await call('GET', '/' + encodeURIComponent(business) + '/dead?' + params);
    if (request !== latest.dead) return;
    if (!reason) renderReasons(data.deadLetters);
    const rows = data.deadLetters.map((d) => el('tr', { 'data-member': d.member },
      el('td', { class: 'check' }, el('input', { type: 'checkbox', value: d.member, class: 'write', 'aria-label': 'select' })),
      memberCell(d),
      el('td', {}, bareReason(d.reason) || '—'),
      el('td', { class: 'num' }, d.attempts === null || d.attempts === undefined ? '—' : String(d.attempts)),
      el('td', { class: 'when' }, when(d.originalDueMs)),
      el('td', { class: 'when' }, when(d.deadAtMs)),
      payloadCell(d, data.bodies),
      el('td', { class: 'actions' },
        el('button', { class: 'write', onclick: () => act(business, 'replay', { member: d.member }, { question: 'Replay 1 dead letter of ' + business + '? It is delivered again now.', detail: d.member }, loadDead) }, 'Replay'),
        ' ',
        el('button', { class: 'write danger', onclick: () => act(business, 'purge', { member: d.member }, { question: 'Purge 1 dead letter of ' + business + ' for good?', detail: d.member }, loadDead) }, 'Purge'))));
    if (data.partial) rows.push(partialRow(8));
    $('#dead tbody').replaceChildren(...(rows.length ? rows
      : [el('tr', {}, el('td', { colspan: 8, class: 'empty' }, 'No dead letters' + (reason ? ' with reason "' + reason + '"' : '') + '.'))]));
  } catch (e) {
    if (e.status === 401 || e.status === 403) $('#dead tbody').replaceChildren(lockedRow(e, 8));
    else notify('Cannot read dead letters: ' + e.message, true);
  }
}

// the reason filter offers the reasons seen, without the attempt count ("unroutable: 312 NO_ROUTE")
function renderReasons(letters) {
  const select = $('#dead-reason');
  const seen = new Set(letters.map((d) => bareReason(d.reason)).filter((r) => r));
  const options = [el('option', { value: '' }, 'any')].concat(Array.from(seen).sort().map((r) => el('option', { value: r }, r)));
  select.replaceChildren(...options);
}

$('#dead-form').addEventListener('submit', (e) => { e.preventDefault(); loadDead(); });
$('#dead-business').addEventListener('change', () => { $('#dead-reason').value = ''; loadDead(); });
$('#dead-reason').addEventListener('change', loadDead);
// dead letters of a business as the overview last counted them
function deadCount(business) {
  const b = state.overview && state.overview.businesses ? state.overview.businesses[business] : null;
  return b && b.backlog && typeof b.backlog.dead === 'number' ? b.backlog.dead : null;
}

$('#dead-replay-selected').addEventListener('click', () => {
  const members = selected('dead');
  const business = $('#dead-business').value;
  if (members.length) act(business, 'replay', { members: members.join('\n') }, { question: 'Replay ' + plural(members.length, 'dead letter', 'dead letters') + ' of ' + business + '? They are delivered again now.' }, loadDead);
});
$('#dead-replay-oldest').addEventListener('click', () => {
  const limit = parseInt($('#dead-replay-limit').value, 10);
  const business = $('#dead-business').value;
  const dead = deadCount(business);
  const n = dead === null ? limit : Math.min(limit, dead);
  if (limit > 0) act(business, 'replay', { limit }, { question: 'Replay the oldest ' + plural(n, 'dead letter', 'dead letters') + ' of ' + business + '? They are delivered again now.' }, loadDead);
});
$('#dead-purge-selected').addEventListener('click', () => {
  const members = selected('dead');
  const business = $('#dead-business').value;
  if (members.length) act(business, 'purge', { members: members.join('\n') }, { question: 'Purge ' + plural(members.length, 'dead letter', 'dead letters') + ' of ' + business + ' for good?' }, loadDead);
});
$('#dead-purge-all').addEventListener('click', () => {
  const business = $('#dead-business').value;
  const dead = deadCount(business);
  act(business, 'purge', { all: true }, {
    question: 'Purge ALL ' + (dead === null ? '' : plural(dead, 'dead letter', 'dead letters') + ' ') + 'of ' + business + ' for good? Their payloads are deleted; this cannot be undone.',
    typed: business,
  }, loadDead);
});

// ---------- schedules ----------

// the state of a schedule: paused by an operator (who), by its configuration, active, or unknown to this instance
function scheduleStateCell(s) {
  const td = el('td', {});
  if (s.state === 'active') td.appendChild(el('span', { class: 'pill ok' }, 'active'));
  else if (s.state === 'paused') {
    td.appendChild(el('span', { class: 'pill warn' }, s.pausedBy ? 'paused by ' + s.pausedBy : s.origin === 'runtime' ? 'created paused' : 'paused by configuration'));
  } else {
    td.appendChild(el('span', { class: 'pill bad', title: 'declared in another instance\'s configuration, or no more: delete it if so' }, s.state));
  }
  return td;
}

function nextCell(s) {
  if (!s.next || !s.next.length) return el('td', { class: 'muted' }, s.state === 'paused' ? '— (paused)' : '—');
  return el('td', { class: 'when next' }, s.next.map((ms, i) => el('div', { class: i === 0 ? '' : 'sub' },
    i === 0 ? when(ms) : localTime(new Date(ms)))));
}

function lastCell(s) {
  if (s.lastSlot === null || s.lastSlot === undefined) return el('td', { class: 'muted' }, '—');
  const delivery = s.lastDelivery || 'unknown';
  const cls = delivery === 'relayed' ? 'ok' : delivery === 'dead' ? 'bad' : 'info';
  return el('td', { class: 'when' }, when(s.lastSlot), el('span', { class: 'pill ' + cls, 'data-field': 'delivery' }, delivery));
}

function skippedCell(s) {
  const reasons = Object.entries(s.skipped || {});
  if (!reasons.length) return el('td', { class: 'zero muted' }, '—');
  return el('td', { class: 'skipped' }, reasons.map(([reason, n]) => el('div', {}, reason + ': ' + count(n))));
}

function scheduleButtons(s) {
  const td = el('td', { class: 'actions' });
  if (!state.overview || !state.overview.writeEnabled) return td;
  const buttons = [];
  if (s.state === 'active') {
    buttons.push(el('button', { class: 'write', onclick: () => scheduleAct(s.name, 'pause', { question: 'Pause schedule ' + s.name + ' on every relay instance? The slots that pass meanwhile are skipped.' }) }, 'Pause'));
  } else if (s.state === 'paused' && s.pausedBy) {
    // Resume lifts only an operator's pause: one paused by configuration stays paused until its config says so
    buttons.push(el('button', { class: 'write', onclick: () => scheduleAct(s.name, 'resume', { question: 'Resume schedule ' + s.name + ' on every relay instance, from its next slot?' }) }, 'Resume'));
  }
  if (s.definition) {
    buttons.push(el('button', { class: 'write', onclick: () => scheduleAct(s.name, 'trigger', { question: 'Trigger schedule ' + s.name + ' now? One extra message is published to ' + s.business + ', besides its slots.' }) }, 'Trigger now'));
  }
  if (s.origin !== 'config' || s.state === 'not-declared-here') {
    buttons.push(el('button', { class: 'write danger', onclick: () => scheduleAct(s.name, 'delete', { question: 'Delete schedule ' + s.name + ' of ' + s.business + '? It fires no more; its pending slot is withdrawn unless already handed to the relay.', typed: s.name }) }, 'Delete'));
  }
  buttons.forEach((b, i) => { if (i) td.appendChild(document.createTextNode(' ')); td.appendChild(b); });
  return td;
}

latest.schedules = 0;

async function loadSchedules() {
  const request = ++latest.schedules;
  try {
    const data = await call('GET', '/schedules');
    if (request !== latest.schedules) return;
    const rows = data.schedules.map((s) => el('tr', { 'data-schedule': s.name, 'data-state': s.state },
      el('td', {}, el('strong', {}, s.name), el('div', { class: 'sub' }, s.origin === 'runtime' ? 'created at runtime' : 'relay.schedules')),
      el('td', {}, s.business),
      el('td', { class: 'member' }, s.definition || '—', s.catchUp ? el('div', { class: 'sub' }, 'catch-up ' + s.catchUp) : null),
      scheduleStateCell(s),
      nextCell(s),
      lastCell(s),
      num(s.written),
      skippedCell(s),
      scheduleButtons(s)));
    $('#schedules tbody').replaceChildren(...(rows.length ? rows
      : [el('tr', {}, el('td', { colspan: 9, class: 'empty' }, 'No schedule.'))]));
  } catch (e) {
    if (request !== latest.schedules) return;
    $('#schedules tbody').replaceChildren(el('tr', {}, el('td', { colspan: 9, class: 'empty' }, 'Cannot read schedules: ' + e.message)));
  }
}

const SCHEDULE_DONE = { pause: 'paused', resume: 'resumed', trigger: 'triggered', delete: 'deleted' };

// a schedule's write, asked first: DELETE .../schedules/<name>, else POST .../schedules/<name>/<action>
async function scheduleAct(name, action, question) {
  if (!(await ask(question))) return;
  const path = '/schedules/' + encodeURIComponent(name);
  try {
    const result = action === 'delete' ? await call('DELETE', path) : await call('POST', path + '/' + action, {});
    notify('schedule ' + name + ': ' + SCHEDULE_DONE[action] + (result && result.messageId ? ' (message id ' + result.messageId + ')' : ''));
  } catch (e) {
    notify('schedule ' + name + ': ' + action + ' failed: ' + e.message, true);
    if (e.status === 401) { sessionStorage.removeItem(TOKEN_KEY); renderToken(); }
  }
  await loadSchedules();
}

// ---------- writes ----------

const DONE = { replayed: 'replayed', purged: 'purged', cancelled: 'cancelled', dueNow: 'made due now' };

// asks in the page's dialog; resolves true when confirmed. ask.typed: the text to type before Confirm is enabled.
function ask(what) {
  const dialog = $('#confirm');
  const input = $('#confirm-typed');
  const ok = $('#confirm-ok');
  $('#confirm-question').textContent = what.question;
  $('#confirm-detail').textContent = what.detail || '';
  $('#confirm-detail').hidden = !what.detail;
  $('#confirm-typed-label').hidden = !what.typed;
  $('#confirm-typed-name').textContent = what.typed || '';
  input.value = '';
  ok.disabled = !!what.typed;
  input.oninput = () => { ok.disabled = input.value !== what.typed; };
  return new Promise((resolve) => {
    const done = (answer) => { dialog.close(); resolve(answer); };
    ok.onclick = () => done(true);
    $('#confirm-cancel').onclick = () => done(false);
    dialog.oncancel = (e) => { e.preventDefault(); done(false); };
    dialog.showModal();
    (what.typed ? input : $('#confirm-cancel')).focus();
  });
}

async function act(business, action, body, question, after) {
  if (question && !(await ask(question))) return;
  try {
    const result = await call('POST', '/' + encodeURIComponent(business) + '/' + action, body === undefined ? {} : body);
    const key = Object.keys(DONE).find((k) => result && result[k] !== undefined);
    notify(business + ': ' + (key ? count(result[key]) + ' ' + DONE[key] : action + ' done'));
  } catch (e) {
    notify(business + ': ' + action + ' failed: ' + e.message, true);
    if (e.status === 401) { sessionStorage.removeItem(TOKEN_KEY); renderToken(); }
  }
  await loadOverview();
  if (after) await after();
}

// ---------- tabs ----------

function showTab(tab) {
  state.tab = tab;
  $$('#tabs button').forEach((b) => b.classList.toggle('active', b.dataset.tab === tab));
  $$('.tab').forEach((s) => { s.hidden = s.id !== 'tab-' + tab; });
  refreshTab();
}

function refreshTab() {
  if (state.tab === 'scheduled') loadScheduled();
  else if (state.tab === 'dead') loadDead();
  else if (state.tab === 'schedules') loadSchedules();
}

$$('#tabs button').forEach((b) => b.addEventListener('click', () => showTab(b.dataset.tab)));
$$('.select-all').forEach((box) => box.addEventListener('change', () => {
  box.closest('table').querySelectorAll('tbody input[type=checkbox]').forEach((c) => { c.checked = box.checked; });
}));

renderToken();
loadOverview().then(refreshTab);
setInterval(() => {
  loadOverview();
  if (state.tab === 'schedules') loadSchedules();
}, REFRESH_MS);
