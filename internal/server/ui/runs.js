// The list of runs: GET /v1/runs with the status and agent filters, paged
// with next_cursor, polled every two seconds while the tab is visible so
// statuses stay live. A row reads at a glance: the input's first words
// (the link), the agent, the status and why, turns, duration, tokens and
// cost, when it started, and its id, short, with a copy button.
//
// The list's runs carry no usage (that needs each run's last state, which
// the list does not load): tokens and cost are read with GET
// /v1/runs/{id} for the rows on screen only, two at a time, again only
// when the run changed (and at most every 10 s while it works).

import { agents, api, errorText } from './api.js';
import { firstWords, fmtCost, fmtDuration, fmtTokens, h, idChip, moveFocus, runDuration, shortID, statusBadge, whenEl } from './dom.js';
import { statusWhy } from './human.js';

const statuses = ['running', 'awaiting_tool_results', 'interrupted', 'stalled', 'completed', 'failed', 'cancelled'];
const pageSize = 50;
const pollEvery = 2000;
const columns = [['Run', 'c-run'], ['Agent', 'c-agent'], ['Status', 'c-status'], ['Turns', 'num'], ['Duration', 'num'],
  ['Tokens', 'num'], ['Cost', 'num'], ['Started', 'c-when']];
const ended = ['completed', 'failed', 'cancelled'];

export function listView(root, params) {
  let status = statuses.includes(params.get('status')) ? params.get('status') : '';
  let agent = params.get('agent') || '';
  let next = '';
  let pagedOn = false; // the user loaded pages past the first
  let generation = 0; // a newer filter makes older answers stale
  let closed = false;
  const rows = new Map();

  const title = h('h1', { tabindex: '-1' }, 'Runs');
  const statusSel = h('select', { id: 'f-status', name: 'status' },
    h('option', { value: '' }, 'any status'),
    statuses.map((s) => h('option', { value: s, selected: s === status }, s.replaceAll('_', ' '))));
  const agentIn = h('input', { id: 'f-agent', name: 'agent', type: 'search', list: 'agent-names', value: agent,
    placeholder: 'any agent', autocomplete: 'off', spellcheck: 'false' });
  const names = h('datalist', { id: 'agent-names' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs', onsubmit: (e) => { e.preventDefault(); apply(); } },
    h('span', { class: 'field' }, h('label', { for: 'f-status' }, 'Status'), statusSel),
    h('span', { class: 'field' }, h('label', { for: 'f-agent' }, 'Agent'), agentIn, names),
    h('button', { type: 'submit' }, 'Filter'));
  statusSel.addEventListener('change', apply);
  const note = h('p', { class: 'note', role: 'status' });
  const tbody = h('tbody');
  const table = h('table', { class: 'runs' },
    h('caption', { class: 'sr-only' }, 'Runs, newest first; the status updates live'),
    h('thead', {}, h('tr', {},
      columns.map(([c, cls]) => h('th', { scope: 'col', class: cls }, c)))),
    tbody);
  const more = h('button', { type: 'button', hidden: true, onclick: loadMore }, 'Load more runs');
  root.append(h('div', { class: 'list-head' }, title, form), note, h('div', { class: 'table-wrap' }, table), more);

  agents().then((list) => names.replaceChildren(...list.map((n) => h('option', { value: n })))).catch(() => {});

  function query(extra) {
    const q = new URLSearchParams();
    if (status) q.set('status', status);
    if (agent) q.set('agent', agent);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    return q.toString();
  }

  function apply() {
    status = statusSel.value;
    agent = agentIn.value.trim();
    const q = query({});
    // replaceState does not fire hashchange: the view stays, the focus too.
    history.replaceState(null, '', q ? `#/?${q}` : '#/');
    first();
  }

  function rowOf(run) {
    const link = h('a', { href: `#/runs/${encodeURIComponent(run.id)}`, class: 'row-link' }, firstWords(run.input, 70) || '(no input)');
    if (run.input) link.title = run.input;
    const sub = h('div', { class: 'sub' }, h('span', { class: 'sub-agent' }, run.agent), idChip(run.id));
    if (run.parent) {
      sub.append(h('span', { class: 'fork-of' }, 'fork of ',
        h('a', { href: `#/runs/${encodeURIComponent(run.parent.id)}`, title: run.parent.id }, shortID(run.parent.id)), ` at step ${run.parent.step}`));
    }
    const why = statusWhy(run);
    const cells = [
      h('td', { class: 'c-run' }, link, sub),
      h('td', { class: 'c-agent', 'data-label': 'Agent' }, run.agent),
      h('td', { class: 'c-status', 'data-label': 'Status' }, statusBadge(run.status), why ? h('span', { class: `row-why why-${run.status}`, title: why }, why) : null),
      h('td', { class: 'num', 'data-label': 'Turns' }, String(run.turns)),
      h('td', { class: 'num', 'data-label': 'Duration', title: `${run.steps} steps` }, fmtDuration(runDuration(run))),
      h('td', { class: 'num tokens', 'data-label': 'Tokens' }, h('span', { class: 'hint', title: 'read when the row is on screen' }, '…')),
      h('td', { class: 'num cost', 'data-label': 'Cost' }, h('span', { class: 'hint', title: 'read when the row is on screen' }, '…')),
      h('td', { class: 'c-when', 'data-label': 'Started' }, whenEl(run.created)),
    ];
    return cells;
  }

  // usage fills a row's tokens and cost from the run as GET shows it.
  function showUsage(row, full) {
    const u = full && full.usage;
    const tok = row.querySelector('.tokens');
    const cost = row.querySelector('.cost');
    if (!tok || !u) return;
    const total = u.prompt_tokens + u.completion_tokens;
    tok.replaceChildren(h('span', { title: `${u.prompt_tokens} prompt + ${u.completion_tokens} completion tokens` }, fmtTokens(total)));
    cost.replaceChildren(u.cost ? h('span', { title: `${u.cost} (at the agent's prices)` }, fmtCost(u.cost)) : h('span', { class: 'hint', title: 'the agent sets no prices' }, '—'));
  }

  // The usage of runs as last read: id -> {key, at, run}.
  const usage = new Map();
  const wanted = new Set(); // ids of rows on screen
  const queue = [];
  let fetching = 0;
  const seen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) wanted.add(e.target.dataset.id);
      else wanted.delete(e.target.dataset.id);
    }
    fetchUsage();
  });

  function stale(run) {
    const got = usage.get(run.id);
    if (!got) return true;
    if (got.key === `${run.steps}/${run.updated}`) return false;
    return ended.includes(run.status) || Date.now() - got.at > 10000;
  }

  function fetchUsage() {
    for (const id of wanted) {
      const row = rows.get(id);
      if (row && !queue.includes(id) && stale(JSON.parse(row.dataset.key))) queue.push(id);
    }
    while (fetching < 2 && queue.length) {
      const id = queue.shift();
      if (!wanted.has(id) || !rows.has(id)) continue;
      fetching++;
      const key = JSON.parse(rows.get(id).dataset.key);
      usage.set(id, { key: `${key.steps}/${key.updated}`, at: Date.now(), run: (usage.get(id) || {}).run });
      api('GET', `/v1/runs/${encodeURIComponent(id)}`).then((full) => {
        usage.set(id, { key: `${full.steps}/${full.updated}`, at: Date.now(), run: full });
        const row = rows.get(id);
        if (row) showUsage(row, full);
      }).catch(() => {}).finally(() => {
        fetching--;
        if (!closed) fetchUsage();
      });
    }
  }

  // update shows run in its row, made when new; a row that holds the
  // focus keeps it (its cells change only when the run did).
  function update(run, after) {
    let row = rows.get(run.id);
    const key = JSON.stringify(run);
    if (!row) {
      row = h('tr', { 'data-id': run.id });
      rows.set(run.id, row);
      if (after) after.after(row);
      else tbody.prepend(row);
    }
    // A working run's duration changes with the clock.
    const shown = run.status === 'running' ? `${key}/${Math.floor(runDuration(run) / 1000)}` : key;
    if (row.dataset.shown !== shown) {
      row.dataset.key = key;
      row.dataset.shown = shown;
      const focused = row.contains(document.activeElement) ? document.activeElement : null;
      row.replaceChildren(...rowOf(run));
      showUsage(row, (usage.get(run.id) || {}).run);
      seen.unobserve(row);
      seen.observe(row);
      if (focused) (focused.classList.contains('copy') ? row.querySelector('.copy') : row.querySelector('.row-link')).focus();
    }
    return row;
  }

  function showNote() {
    note.classList.remove('error');
    note.textContent = rows.size === 0 ? 'No runs match.' : `${rows.size} run${rows.size === 1 ? '' : 's'} shown, newest first; statuses refresh every 2 s.`;
    more.hidden = !next;
  }

  function fail(err) {
    note.classList.add('error');
    note.textContent = `Could not list runs: ${errorText(err)}`;
  }

  async function first() {
    const gen = ++generation;
    try {
      const page = await api('GET', `/v1/runs?${query({ limit: pageSize })}`);
      if (gen !== generation) return;
      rows.clear();
      wanted.clear();
      seen.disconnect();
      tbody.replaceChildren();
      let last = null;
      for (const run of page.runs) last = update(run, last);
      next = page.next_cursor || '';
      pagedOn = false;
      showNote();
    } catch (err) {
      if (gen === generation) fail(err);
    }
  }

  async function loadMore() {
    const gen = generation;
    try {
      const page = await api('GET', `/v1/runs?${query({ limit: pageSize, cursor: next })}`);
      if (gen !== generation) return;
      let last = tbody.lastElementChild;
      for (const run of page.runs) last = update(run, last);
      next = page.next_cursor || '';
      pagedOn = true;
      showNote();
    } catch (err) {
      fail(err);
    }
  }

  // poll reads the newest runs again: statuses change, new runs appear at
  // the top, and runs that no longer match the filter go.
  let polling = false;
  async function poll() {
    if (polling || document.visibilityState !== 'visible' || document.querySelector('dialog[open]')) return;
    polling = true;
    const gen = generation;
    try {
      const limit = Math.min(200, Math.max(pageSize, rows.size));
      const page = await api('GET', `/v1/runs?${query({ limit })}`);
      if (gen !== generation) return;
      const fresh = new Set(page.runs.map((r) => r.id));
      let last = null;
      for (const run of page.runs) last = update(run, last);
      // Rows above the last fresh one (or all, when the page was the
      // whole list) that are not in it no longer match.
      const covered = page.next_cursor && last ? [...tbody.children].slice(0, [...tbody.children].indexOf(last)) : [...tbody.children];
      for (const row of covered) {
        if (!fresh.has(row.dataset.id)) {
          rows.delete(row.dataset.id);
          wanted.delete(row.dataset.id);
          seen.unobserve(row);
          row.remove();
        }
      }
      if (!pagedOn) next = page.next_cursor || '';
      showNote();
      fetchUsage();
    } catch (err) {
      if (gen === generation) fail(err);
    } finally {
      polling = false;
    }
  }

  first();
  const timer = setInterval(poll, pollEvery);
  return {
    close: () => {
      closed = true;
      clearInterval(timer);
      seen.disconnect();
      generation++;
    },
    move: (dir) => moveFocus([...tbody.querySelectorAll('.row-link')], dir),
    focus: () => title.focus(),
    filter: () => { agentIn.focus(); agentIn.select(); },
  };
}
