// A run's page: its header (status, answer or failure, input, counters,
// usage, holder, parent and forks), the calls it waits for, the
// conversation turn by turn (with a box for the next message once the run
// answered), replay, and the timeline of its steps. The steps come from
// GET /steps, then live from the run's event stream (EventSource), which
// also says when the run changed (it is read again then) and when it
// ended; after a message is sent the page follows the stream again.

import { api, APIError, errorText } from './api.js';
import { conversationView } from './conversation.js';
import { fill, h, holderText, runLink, statusBadge, timeEl } from './dom.js';
import { flightPanel } from './flight.js';
import { forkForm } from './fork.js';
import { pendingPanel } from './pending.js';
import { replayBox } from './replay.js';
import { timeline } from './timeline.js';

export function runView(root, id) {
  const path = `/v1/runs/${encodeURIComponent(id)}`;
  let closed = false;
  let run = null;
  let lastSeq = -1;
  let pendingKey = null;
  let es = null;
  let retry = 1000;
  let retryTimer = null;

  const title = h('h1', { id: 'run-title', tabindex: '-1' }, 'Run ', h('code', {}, id));
  const badge = h('span', { id: 'run-status' });
  const live = h('span', { class: 'live', id: 'live', role: 'status' });
  const notice = h('p', { class: 'notice', role: 'status' });
  const facts = h('div', { class: 'facts' });
  const pendingBox = h('section', { class: 'pending', id: 'pending', hidden: true, 'aria-labelledby': 'pending-title' });
  const forkList = h('div', {}, h('p', { class: 'hint' }, 'Looking for forks…'));
  const flight = flightPanel();
  const conv = conversationView(id, messageSent);
  const tl = timeline(openFork, () => (run && run.parent ? `the fork starts from step ${run.parent.step} of its parent` : 'the run starts'));
  root.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← All runs')),
    h('div', { class: 'run-title' }, title, badge, live),
    notice, facts, pendingBox, conv.el,
    h('div', { class: 'panels' },
      replayBox(id, (seq) => tl.highlight(seq)),
      h('section', { class: 'forks', 'aria-labelledby': 'forks-title' }, h('h2', { id: 'forks-title' }, 'Forks of this run'), forkList)),
    tl.el, flight.el);

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
    badge.replaceChildren(statusBadge(r.status));
    if (r.status === 'stalled') setLive('stalled', stalledLabel);
    else if (live.dataset.state === 'stalled') setLive(es ? 'live' : 'connecting…');
    fill(facts, factsOf(r));
    conv.setRun(r);
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
        runLink(f.id), ` at step ${f.parent.step} `, statusBadge(f.status)))),
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
      flight.clear();
      stopStream();
      clearTimeout(retryTimer);
    },
    move: (dir) => tl.move(dir),
    focus: () => title.focus(),
  };
}

// factsOf is the run's header: the failure or the answer, then its facts.
function factsOf(r) {
  const out = [];
  if (r.failure) {
    out.push(h('div', { class: 'failure-box', role: 'note' },
      h('strong', {}, r.status === 'cancelled' ? `Cancelled (${r.failure.code})` : `Failed (${r.failure.code})`), ': ', r.failure.reason));
  } else if (r.status === 'stalled') {
    const times = r.stall_attempts > 1 ? ` (${r.stall_attempts} times in a row)` : '';
    const next = r.retry_at ? [', next try ', timeEl(r.retry_at)] : [', next try now'];
    out.push(h('div', { class: 'reason-box stall-box', role: 'note' },
      h('strong', {}, `Stalled${times}`), ...next, ': ', r.reason || 'no reason recorded'));
  } else if (r.reason) {
    out.push(h('div', { class: 'reason-box' }, h('strong', {}, 'Reason: '), r.reason));
  }
  if (r.answer) out.push(h('div', { class: 'answer-box' }, h('strong', {}, 'Answer'), h('pre', { id: 'run-answer' }, r.answer)));
  const dl = h('dl', { class: 'fact-list' });
  const add = (k, ...v) => dl.append(h('div', {}, h('dt', {}, k), h('dd', {}, ...v)));
  add('Agent', r.agent);
  if (r.parent) {
    const link = runLink(r.parent.id);
    link.classList.add('parent-link');
    add('Forked from', link, ` at step ${r.parent.step}`);
    dl.lastElementChild.classList.add('wide');
  }
  add('Created', timeEl(r.created));
  add('Updated', timeEl(r.updated));
  add('Steps', String(r.steps));
  add('Turns', String(r.turns));
  if (r.counters) {
    add('Model calls', String(r.counters.model_calls));
    add('Corrections / escalations', `${r.counters.corrections} / ${r.counters.escalations}`);
  }
  if (r.usage) add('Tokens', `${r.usage.prompt_tokens} prompt / ${r.usage.completion_tokens} completion`);
  add('Holder', holderText(r.holder));
  if (r.stored_status) add('Stored status', r.stored_status.replaceAll('_', ' '));
  if (r.retry_at) add('Retry at', timeEl(r.retry_at));
  if (r.stall_attempts) add('Stall attempts', String(r.stall_attempts));
  if (r.tools_used && r.tools_used.length) add('Tools used', r.tools_used.join(', '));
  if (r.sources && r.sources.length) add('Sources', r.sources.join(', '));
  if (r.in_doubt_calls && r.in_doubt_calls.length) {
    add('In doubt', ...r.in_doubt_calls.map((c) => h('div', { class: 'err' }, `${c.name} ${c.id} (step ${c.step}, started `, timeEl(c.started), ')')));
  }
  out.push(dl, h('div', { class: 'input-box' }, h('strong', {}, 'Input'), h('pre', {}, r.input || '')));
  return out;
}
