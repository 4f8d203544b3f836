// The list of runs: GET /v1/runs with the status and agent filters, paged
// with next_cursor, polled every two seconds while the tab is visible so
// statuses stay live.

import { agents, api, errorText } from './api.js';
import { h, holderText, moveFocus, runLink, shortID, statusBadge, timeEl } from './dom.js';

const statuses = ['running', 'awaiting_tool_results', 'interrupted', 'stalled', 'completed', 'failed', 'cancelled'];
const pageSize = 50;
const pollEvery = 2000;

export function listView(root, params) {
  let status = statuses.includes(params.get('status')) ? params.get('status') : '';
  let agent = params.get('agent') || '';
  let next = '';
  let pagedOn = false; // the user loaded pages past the first
  let generation = 0; // a newer filter makes older answers stale
  const rows = new Map();

  const title = h('h1', { tabindex: '-1' }, 'Runs');
  const statusSel = h('select', { id: 'f-status', name: 'status' },
    h('option', { value: '' }, 'any status'),
    statuses.map((s) => h('option', { value: s, selected: s === status }, s.replaceAll('_', ' '))));
  const agentIn = h('input', { id: 'f-agent', name: 'agent', type: 'search', list: 'agent-names', value: agent,
    placeholder: 'any agent', autocomplete: 'off', spellcheck: 'false' });
  const names = h('datalist', { id: 'agent-names' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs', onsubmit: (e) => { e.preventDefault(); apply(); } },
    h('label', { for: 'f-status' }, 'Status'), statusSel,
    h('label', { for: 'f-agent' }, 'Agent'), agentIn, names,
    h('button', { type: 'submit' }, 'Filter'));
  statusSel.addEventListener('change', apply);
  const note = h('p', { class: 'note', role: 'status' });
  const tbody = h('tbody');
  const table = h('table', { class: 'runs' },
    h('caption', { class: 'sr-only' }, 'Runs, newest first; the status updates live'),
    h('thead', {}, h('tr', {},
      ['Run', 'Agent', 'Status', 'Created', 'Updated', 'Steps', 'Holder', 'Forked from'].map((c) => h('th', { scope: 'col' }, c)))),
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
    const parent = run.parent
      ? [runLink(run.parent.id, shortID(run.parent.id)), ` at step ${run.parent.step}`]
      : '—';
    const link = runLink(run.id);
    link.classList.add('row-link');
    if (run.input) link.title = `Input: ${run.input}`;
    return [h('td', {}, link), h('td', {}, run.agent), h('td', {}, statusBadge(run.status)), h('td', {}, timeEl(run.created)),
      h('td', {}, timeEl(run.updated)), h('td', { class: 'num' }, run.steps), h('td', {}, holderText(run.holder)), h('td', {}, parent)];
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
    if (row.dataset.key !== key) {
      row.dataset.key = key;
      const focused = row.contains(document.activeElement);
      row.replaceChildren(...rowOf(run));
      if (focused) row.querySelector('.row-link').focus();
    }
    return row;
  }

  function showNote() {
    note.classList.remove('error');
    note.textContent = rows.size === 0 ? 'No runs match.' : `${rows.size} run${rows.size === 1 ? '' : 's'} shown; statuses refresh every 2 s.`;
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
          row.remove();
        }
      }
      if (!pagedOn) next = page.next_cursor || '';
      showNote();
    } catch (err) {
      if (gen === generation) fail(err);
    } finally {
      polling = false;
    }
  }

  first();
  const timer = setInterval(poll, pollEvery);
  return {
    close: () => { clearInterval(timer); generation++; },
    move: (dir) => moveFocus([...tbody.querySelectorAll('.row-link')], dir),
    focus: () => title.focus(),
    filter: () => { agentIn.focus(); agentIn.select(); },
  };
}
