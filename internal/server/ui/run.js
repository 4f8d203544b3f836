// A run's page: its header (agent, short id with a copy button, status,
// when it started and its parent), what its state calls for first (a
// failure, a stall with its next try, calls in doubt, the calls it waits
// for, its answer), its totals (duration, turns, steps, model calls,
// tokens, cost), the rest under Details; then the conversation turn by
// turn (with a box for the next message once the run answered), where the
// time went (waterfall.js), its steps (timeline.js), replay and forks.
// The steps come from
// GET /steps, then live from the run's event stream (EventSource), which
// also says when the run changed (it is read again then) and when it
// ended; after a message is sent the page follows the stream again.

import { api, APIError, errorText } from './api.js';
import { conversationView } from './conversation.js';
import { copyButton, fill, firstWords, fmtCost, fmtDuration, fmtIn, fmtTokens, h, holderText, idChip, jumpLink, runDuration, runLink, shortID, statusBadge, timeEl, whenEl } from './dom.js';
import { flightPanel } from './flight.js';
import { forkForm } from './fork.js';
import { failureTitle } from './human.js';
import { pendingPanel } from './pending.js';
import { replayBox } from './replay.js';
import { timeline } from './timeline.js';
import { waterfall } from './waterfall.js';

export function runView(root, id) {
  const path = `/v1/runs/${encodeURIComponent(id)}`;
  let closed = false;
  let run = null;
  let lastSeq = -1;
  let pendingKey = null;
  let es = null;
  let retry = 1000;
  let retryTimer = null;

  const agentName = h('span', { class: 'agent-name' }, 'Run');
  const title = h('h1', { id: 'run-title', tabindex: '-1' }, agentName, ' ', h('span', { class: 'title-id' }, 'run ', h('code', { title: id }, shortID(id))));
  const badge = h('span', { id: 'run-status' });
  const live = h('span', { class: 'live', id: 'live', role: 'status' });
  const notice = h('p', { class: 'notice', role: 'status' });
  const sub = h('p', { class: 'run-sub' });
  const banner = h('div', { class: 'banners' });
  const stats = h('dl', { class: 'stats', 'aria-label': 'Totals' });
  const details = h('details', { class: 'run-details' }, h('summary', {}, 'Details: id, times, holder, counters'));
  const pendingBox = h('section', { class: 'pending', id: 'pending', hidden: true, 'aria-labelledby': 'pending-title' });
  const forkList = h('div', {}, h('p', { class: 'hint' }, 'Looking for forks…'));
  const childList = h('section', { class: 'children', hidden: true, 'aria-labelledby': 'children-title' });
  const flight = flightPanel();
  const conv = conversationView(id, messageSent);
  const tl = timeline({ runID: id, openFork, parent: () => run && run.parent });
  const wf = waterfall((seq) => tl.highlight(seq, false));
  root.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← All runs')),
    h('div', { class: 'run-title' }, title, h('span', { class: 'title-copy' }, copyButton(id, 'run id')), badge, live),
    sub, notice, banner, pendingBox, stats, details, childList,
    h('nav', { class: 'jumps', 'aria-label': 'On this page' },
      jumpLink('conversation-title', 'Conversation'), jumpLink('waterfall-title', 'Where the time went'),
      jumpLink('timeline-title', 'Steps'), jumpLink('replay-title', 'Replay and forks')),
    conv.el, wf.el, tl.el, flight.el,
    h('div', { class: 'panels' },
      replayBox(id, (seq) => tl.highlight(seq, true)),
      h('section', { class: 'forks', 'aria-labelledby': 'forks-title' }, h('h2', { id: 'forks-title' }, 'Forks of this run'), forkList)));

  function say(text, error) {
    notice.textContent = text;
    notice.classList.toggle('error', Boolean(error));
  }

  function setLive(state, label) {
    live.textContent = label || state;
    live.dataset.state = state;
  }

  // A stalled run is not live: it waits for its next try.
  const stalledLabel = 'not live: waiting for its next try';

  // newer reports whether r is at least as recent as the run shown (an
  // answer that overtook another must not undo it).
  function newer(r) {
    if (!run) return true;
    if (r.steps !== run.steps) return r.steps > run.steps;
    return Date.parse(r.updated) >= Date.parse(run.updated);
  }

  function show(r) {
    if (closed || !newer(r)) return;
    run = r;
    agentName.textContent = r.agent;
    document.title = `${r.agent} ${shortID(r.id)}: ${r.status.replaceAll('_', ' ')} · stepwise`;
    badge.replaceChildren(statusBadge(r.status));
    if (r.status === 'stalled') setLive('stalled', stalledLabel);
    else if (live.dataset.state === 'stalled') setLive(es ? 'live' : 'connecting…');
    fill(sub, subOf(r));
    fill(banner, bannersOf(r));
    fill(stats, statsOf(r));
    fillDetails(details, r);
    showChildren(r);
    conv.setRun(r);
    wf.setRun(r);
    const key = r.status === 'awaiting_tool_results' ? r.pending_tool_calls.map((c) => c.id).join(',') : '';
    if (key === pendingKey) return;
    pendingKey = key;
    if (key) {
      pendingPanel(pendingBox, r, sent, () => refresh());
    } else {
      const hadFocus = pendingBox.contains(document.activeElement);
      pendingBox.hidden = true;
      pendingBox.replaceChildren();
      if (hadFocus) title.focus();
    }
  }

  function sent(r) {
    say('Answers sent: the run goes on; its steps appear below as they happen.');
    show(r);
  }

  // messageSent follows the run again (its stream ended when it answered).
  function messageSent(r) {
    say('Message sent: the run goes on; its answer appears in the conversation.');
    show(r);
    openStream();
  }

  // refresh reads the run again; calls that come while one is under way
  // make one more read after it.
  let reading = false;
  let again = false;
  async function refresh() {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        show(await api('GET', path));
      } while (again && !closed);
    } catch (err) {
      say(`Could not read the run: ${errorText(err)}`, true);
    } finally {
      reading = false;
    }
  }

  function addStep(step) {
    if (step.seq <= lastSeq) return;
    lastSeq = step.seq;
    tl.add(step);
    conv.add(step);
    wf.add(step);
    flight.stepped(step.seq);
  }

  function stopStream() {
    if (es) es.close();
    es = null;
  }

  function openStream() {
    if (closed || es) return;
    const src = new EventSource(`${path}/events?after=${lastSeq}`);
    es = src;
    setLive('connecting…');
    src.addEventListener('open', () => {
      retry = 1000;
      if (run && run.status === 'stalled') setLive('stalled', stalledLabel);
      else setLive('live');
    });
    src.addEventListener('step', (e) => addStep(JSON.parse(e.data)));
    // A run event carries the run as GET shows it.
    src.addEventListener('run', (e) => show(JSON.parse(e.data)));
    // The live events of a model call in flight, after the step that asked for it.
    src.addEventListener('calling', (e) => flight.calling(JSON.parse(e.data)));
    src.addEventListener('delta', (e) => flight.delta(JSON.parse(e.data)));
    src.addEventListener('retry', (e) => flight.retry(JSON.parse(e.data)));
    src.addEventListener('end', () => {
      flight.clear();
      stopStream();
      setLive('ended');
      say('');
      refresh();
    });
    src.addEventListener('error', (e) => {
      if (e.data) say(`The event stream failed: ${JSON.parse(e.data).message}`, true);
      if (src.readyState !== EventSource.CLOSED) {
        setLive('reconnecting…');
        return;
      }
      // The server refused the stream (a token, a restart): read the run
      // (which asks for a token on 401), then stream again.
      stopStream();
      setLive(`disconnected; retrying in ${retry / 1000} s`);
      retryTimer = setTimeout(async () => {
        try {
          await refresh();
          openStream();
        } catch {
          openStream();
        }
      }, retry);
      retry = Math.min(retry * 2, 30000);
    });
  }

  async function load() {
    try {
      show(await api('GET', path));
      const got = await api('GET', `${path}/steps?limit=5000`);
      if (closed) return;
      for (const step of got.steps) addStep(step);
      const ended = ['completed', 'failed', 'cancelled'].includes(run.status);
      if (ended && lastSeq >= run.steps) setLive('ended');
      else openStream();
    } catch (err) {
      if (err instanceof APIError && err.status === 404) say(`No run ${id} on this server.`, true);
      else say(`Could not load the run: ${errorText(err)}`, true);
    }
  }

  // showChildren lists the child runs of the run's sub-agent calls: the
  // tree, one level at a time (each child's page lists its own).
  function showChildren(r) {
    const kids = r.children || [];
    childList.hidden = kids.length === 0;
    if (kids.length === 0) return;
    fill(childList, h('h2', { id: 'children-title' }, 'Sub-agent runs'),
      h('ul', { class: 'fork-list' }, kids.map((c) => h('li', {},
        runLink(c.id, `${c.tool}: ${c.agent}`), ' ', h('code', { class: 'call-id', title: c.id }, shortID(c.id)),
        ` called at step ${c.step} (${c.call_id}) `, statusBadge(c.status)))));
  }

  // loadForks lists the runs forked from this one (the first 200).
  async function loadForks() {
    try {
      const page = await api('GET', `/v1/runs?parent=${encodeURIComponent(id)}&limit=200`);
      if (closed) return;
      const forks = page.runs;
      const more = page.next_cursor ? ' (the 200 newest shown)' : '';
      if (forks.length === 0) {
        forkList.replaceChildren(h('p', { class: 'hint' }, 'None.'));
        return;
      }
      fill(forkList, h('ul', { class: 'fork-list' }, forks.map((f) => h('li', {},
        runLink(f.id, firstWords(f.input, 50) || f.id), ' ', h('code', { class: 'call-id', title: f.id }, shortID(f.id)),
        ` from step ${f.parent.step} `, statusBadge(f.status)))),
      more ? h('p', { class: 'hint' }, `More forks exist${more}.`) : null);
    } catch (err) {
      forkList.replaceChildren(h('p', { class: 'error' }, `Could not list forks: ${errorText(err)}`));
    }
  }

  let openSlot = null;
  function openFork(step, next, slot, button) {
    const close = () => {
      slot.replaceChildren();
      button.setAttribute('aria-expanded', 'false');
      if (openSlot === slot) openSlot = null;
      button.focus();
    };
    if (slot.firstChild) {
      close();
      return;
    }
    if (openSlot) openSlot.replaceChildren();
    const f = forkForm(id, step, next, (fork) => { location.hash = `#/runs/${encodeURIComponent(fork.id)}`; }, close);
    slot.replaceChildren(f.form);
    openSlot = slot;
    button.setAttribute('aria-expanded', 'true');
    f.focus();
  }

  load().then(loadForks);
  return {
    close() {
      closed = true;
      wf.close();
      flight.clear();
      stopStream();
      clearTimeout(retryTimer);
    },
    move: (dir) => tl.move(dir),
    focus: () => title.focus(),
  };
}

// subOf is the line under the title: when it started, and its parent.
function subOf(r) {
  const out = ['Started ', whenEl(r.created)];
  if (r.parent) {
    const link = runLink(r.parent.id, shortID(r.parent.id));
    link.classList.add('parent-link');
    link.title = r.parent.id;
    out.push(' · ', h('span', { class: 'fork-of' }, 'Forked from run ', link, ` at step ${r.parent.step}`));
  }
  return out;
}

// bannersOf is what the run's state calls for first: a failure, a stall,
// calls in doubt, a pending cancellation, the answer.
function bannersOf(r) {
  const out = [];
  if (r.failure) {
    out.push(h('div', { class: `banner failure-box${r.status === 'cancelled' ? ' cancelled' : ''}`, role: 'note' },
      h('h2', {}, failureTitle(r.failure.code, r.status)),
      h('p', { class: 'why' }, r.failure.reason),
      h('p', { class: 'hint' }, 'Code ', h('code', {}, r.failure.code), ` · at step ${r.steps} · `,
        h('a', { href: `#step-${r.steps}`, onclick: (e) => { e.preventDefault(); showStep(r.steps); } }, 'show the step'))));
  } else if (r.status === 'stalled') {
    const times = r.stall_attempts > 1 ? ` (${r.stall_attempts} times in a row)` : '';
    const next = r.retry_at ? [`, next try ${fmtIn(r.retry_at)} (`, timeEl(r.retry_at), ')'] : [', next try now'];
    out.push(h('div', { class: 'banner stall-box', role: 'note' },
      h('h2', {}, `Stalled${times}`, ...next),
      h('p', { class: 'why' }, r.reason || 'no reason recorded'),
      h('p', { class: 'hint' }, 'The run is not lost: a worker tries it again then, from its last step.')));
  } else if (r.status === 'interrupted') {
    out.push(h('div', { class: 'banner reason-box', role: 'note' }, h('h2', {}, 'Interrupted'), h('p', { class: 'why' }, r.reason || 'Its driver stopped; a worker takes it over.')));
  } else if (r.reason) {
    out.push(h('div', { class: 'banner reason-box' }, h('strong', {}, 'Reason: '), r.reason));
  }
  if (r.cancel_requested) out.push(h('div', { class: 'banner reason-box' }, h('strong', {}, 'Cancelling: '), r.cancel_requested));
  if (r.in_doubt_calls && r.in_doubt_calls.length) {
    out.push(h('div', { class: 'banner doubt-box', role: 'note' },
      h('h2', {}, 'Calls in doubt'),
      h('p', { class: 'hint' }, 'These calls started and were not recorded as done: they may have run.'),
      h('ul', {}, r.in_doubt_calls.map((c) => h('li', {}, h('code', {}, c.name), ` (${c.id}, step ${c.step}, started `, timeEl(c.started), ')')))));
  }
  if (r.answer) {
    out.push(h('div', { class: 'banner answer-box' }, h('h2', {}, r.turns > 1 ? `Answer (turn ${r.turns})` : 'Answer'), h('pre', { id: 'run-answer' }, r.answer)));
  }
  return out;
}

// showStep brings a step of the timeline to view.
function showStep(seq) {
  const li = document.getElementById(`step-${seq}`);
  if (!li) return;
  li.scrollIntoView({ block: 'center' });
  li.focus({ preventScroll: true });
}

// statsOf is the run's totals, one line of big numbers.
function statsOf(r) {
  const out = [];
  const add = (k, v, title) => out.push(h('div', { title: title || null }, h('dt', {}, k), h('dd', {}, v)));
  add('Duration', fmtDuration(runDuration(r)), r.status === 'running' ? 'so far' : 'from its start to its last change');
  add('Turns', String(r.turns));
  add('Steps', String(r.steps));
  if (r.counters) add('Model calls', String(r.counters.model_calls));
  if (r.usage) {
    const u = r.usage;
    add('Tokens', fmtTokens(u.prompt_tokens + u.completion_tokens), `${u.prompt_tokens} prompt + ${u.completion_tokens} completion`);
    if (u.cost) add('Cost', fmtCost(u.cost), `${u.cost} in the currency of the agent's prices`);
  }
  if (r.tools_used && r.tools_used.length) add('Tools used', r.tools_used.join(', '));
  return out;
}

// fillDetails lists everything else the run says, under a disclosure.
function fillDetails(details, r) {
  const dl = h('dl', { class: 'fact-list' });
  const add = (k, ...v) => dl.append(h('div', {}, h('dt', {}, k), h('dd', {}, ...v)));
  add('Run id', idChip(r.id), h('code', { class: 'full-id' }, r.id));
  add('Agent', r.agent);
  add('Status', r.status.replaceAll('_', ' '), r.stored_status ? ` (stored: ${r.stored_status.replaceAll('_', ' ')})` : '');
  add('Created', timeEl(r.created));
  add('Updated', timeEl(r.updated));
  if (r.usage) add('Tokens', `${r.usage.prompt_tokens} prompt / ${r.usage.completion_tokens} completion`);
  if (r.usage && r.usage.cost) add('Cost (exact)', r.usage.cost);
  if (r.counters) {
    add('Requests', String(r.counters.requests));
    add('Corrections / escalations', `${r.counters.corrections} / ${r.counters.escalations}`);
  }
  add('Holder', holderText(r.holder));
  if (r.retry_at) add('Retry at', timeEl(r.retry_at));
  if (r.stall_attempts) add('Stall attempts', String(r.stall_attempts));
  if (r.sources && r.sources.length) add('Sources', r.sources.join(', '));
  const summary = details.firstElementChild;
  details.replaceChildren(summary, dl, h('div', { class: 'input-box' }, h('strong', {}, 'Input'), h('pre', {}, r.input || '')));
}
