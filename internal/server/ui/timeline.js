// A run's steps, one item each, headed in words ("Asked the model", "Ran
// read_file", "Paused for approve"). A step holds the result the previous
// step's request got and its own decision, the request; the page shows
// each request with what it got: a model call with its reply, each tool
// call once, with its arguments and its result (collapsible), filled in
// when the next step arrives. What a step added to the conversation and
// the core's own descriptions are under its "Raw" toggle; a model call's
// exact request under "Request" (GET /steps/{seq}/request).

import { api, errorText } from './api.js';
import { fill, firstWords, fmtCost, fmtDuration, fmtTokens, h, moveFocus, plural, pretty, statusBadge, timeEl, toggle } from './dom.js';
import { isCompaction, stepHeading } from './human.js';

// forkable are the action kinds whose request a fork can answer or redo.
const forkable = ['model', 'tools', 'external', 'memory_search', 'memory_create', 'memory_traverse'];

// timeline makes the list for run runID: openFork(step, next, slot,
// button) opens a step's fork form in slot; parent() is the run's parent
// ({id, step}) or null.
export function timeline({ runID, openFork, parent }) {
  const list = h('ol', { class: 'steps' });
  const el = h('section', { class: 'timeline', 'aria-labelledby': 'timeline-title' },
    h('h2', { id: 'timeline-title', tabindex: '-1' }, 'Steps'), list);
  const items = new Map();
  let last = null;
  let t0 = NaN;

  function add(step) {
    if (items.has(step.seq)) return;
    const prev = last && last.step.seq < step.seq ? last.step : null;
    if (Number.isNaN(t0)) t0 = Date.parse(step.created);
    const item = render(step, prev);
    items.set(step.seq, item);
    list.append(item.li);
    const shown = last ? last.answer(step) : new Set();
    item.orphans(shown, prev);
    last = item;
  }

  function render(step, prev) {
    const seq = step.seq;
    const a = step.action;
    const titleID = `step-${seq}-title`;
    const li = h('li', { class: 'step', id: `step-${seq}`, tabindex: '-1', 'aria-labelledby': titleID, 'data-seq': seq });
    if (a) li.dataset.kind = isCompaction(a) ? 'compact' : a.kind;
    const took = h('span', { class: 'took' });
    const meta = h('p', { class: 'meta' },
      h('span', { title: 'since the run started' }, `+${fmtDuration(Date.parse(step.created) - t0)}`), took);
    if (step.status !== 'running') {
      const badge = statusBadge(step.status);
      badge.title = 'the run\'s status after this step';
      meta.append(' ', badge);
    }
    const headText = stepHeading(step, prev, seq === 0 ? parent() : null);
    li.append(h('div', { class: 'step-head' },
      h('h3', { id: titleID }, h('span', { class: 'seq' }, `#${seq}`), ' ', h('span', { class: 'heading' }, headText)),
      meta));

    // What came in that no earlier step shows: the user's message.
    const r = step.result;
    if (r && r.kind === 'user_message') {
      li.append(bubble('User', (r.data && r.data.content) || ''));
    } else if (seq === 0) {
      const users = step.messages.filter((m) => m.role === 'user');
      if (users.length) li.append(bubble('User', users[users.length - 1].content || ''));
      const others = step.messages.filter((m) => m.role !== 'system').length;
      if (others > 1) li.append(h('p', { class: 'hint' }, `The conversation starts with ${plural(others, 'message')}; Raw shows them.`));
    }
    if (r && r.kind === 'cancelled') li.append(h('p', { class: 'hint' }, 'The run was cancelled here.'));

    const body = h('div', { class: 'step-body' });
    li.append(body);
    const calls = new Map(); // tool_call_id -> fill(result)
    let reply = null; // fill(next step) of a model call
    let gotData = null; // fill(next step) of a memory request
    if (a) {
      switch (a.kind) {
        case 'model':
          reply = modelView(body, a);
          break;
        case 'tools':
        case 'external':
          body.append(h('ul', { class: 'tool-calls' }, (a.calls || []).map((c, i) => callView(c, `${seq}-${i}`, a.kind, calls))));
          break;
        case 'complete':
          body.append(h('div', { class: 'answer-block' }, h('span', { class: 'label' }, 'Answer'), h('pre', {}, a.answer || '')));
          break;
        case 'fail':
          li.classList.add('error');
          body.append(h('div', { class: 'failure-block' }, h('span', { class: 'label' }, `Code ${a.code || 'failed'}`), h('pre', {}, a.reason || '')));
          break;
        default:
          body.append(h('p', {}, h('code', { class: 'describe' }, a.describe)));
          gotData = h('div', { class: 'got' }, h('span', { class: 'label' }, 'Waiting for the result…'));
          body.append(gotData);
      }
    }

    // The step's tools: fork, its exact request, the raw step.
    const bar = h('div', { class: 'step-actions' });
    const slots = h('div', { class: 'step-slots' });
    li.append(bar, slots);
    let nextResult = null;
    if (a && forkable.includes(a.kind)) {
      const slot = h('div', { class: 'fork-slot', id: `fork-${seq}` });
      const button = h('button', { type: 'button', class: 'fork-button', 'aria-expanded': 'false', 'aria-controls': `fork-${seq}`,
        'aria-label': `Fork here: a new run from step ${seq}`,
        onclick: () => openFork(step, nextResult, slot, button) }, 'Fork here…');
      bar.append(button);
      slots.append(slot);
    }
    if (a && a.kind === 'model') {
      const t = toggle('Request', `request-${seq}`, (panel) => loadRequest(panel, runID, seq), { 'aria-label': `The exact request of step ${seq}` });
      bar.append(t.button);
      slots.append(t.panel);
    }
    const raw = toggle('Raw', `raw-${seq}`, (panel) => rawView(panel, step, nextResult), { 'aria-label': `Step ${seq} as recorded` });
    bar.append(raw.button);
    slots.append(raw.panel);

    return {
      li,
      step,
      // answer takes the next step, whose result answers this step's
      // request: the reply, each call's result, how long it took and the
      // tokens it used.
      answer(next) {
        nextResult = next.result;
        const ms = Date.parse(next.created) - Date.parse(step.created);
        const dp = next.usage.prompt_tokens - step.usage.prompt_tokens;
        const dc = next.usage.completion_tokens - step.usage.completion_tokens;
        const parts = [];
        if (a && forkable.includes(a.kind)) parts.push(h('span', { title: 'how long the request took' }, `took ${fmtDuration(ms)}`));
        if (dp || dc) parts.push(h('span', { title: `${dp} prompt + ${dc} completion tokens` }, `${fmtTokens(dp + dc)} tokens`));
        const cost = costDelta(step.usage.cost, next.usage.cost);
        if (cost) parts.push(h('span', { title: `cost ${cost}` }, `cost ${fmtCost(cost)}`));
        took.replaceChildren(...parts.flatMap((p) => [' · ', p]));
        const res = next.result;
        if (!res) return new Set();
        if (reply) {
          if (reply(res)) li.classList.add('error');
        }
        const shown = new Set();
        for (const x of results(res)) {
          const fill = calls.get(x.tool_call_id);
          if (!fill) continue;
          fill(x);
          shown.add(x.tool_call_id);
          if (x.error) li.classList.add('error');
        }
        if (gotData) {
          gotData.replaceChildren(h('span', { class: 'label' }, 'Got '), h('code', {}, res.describe),
            h('pre', {}, pretty(res.data)));
        }
        return shown;
      },
      // orphans shows the tool results this step took whose calls no
      // earlier step shows (a fork starts after its calls were made),
      // with the call as the conversation holds it.
      orphans(shown, before) {
        const rest = results(step.result).filter((x) => !shown.has(x.tool_call_id));
        if (rest.length === 0) return;
        const known = new Map();
        for (const m of (before ? before.messages : [])) for (const c of m.calls || []) known.set(c.id, c);
        const fills = new Map();
        const ul = h('ul', { class: 'tool-calls' }, rest.map((x, i) => {
          const c = known.get(x.tool_call_id) || { id: x.tool_call_id, name: 'a call', arguments: {} };
          return callView(c, `${seq}-got-${i}`, 'tools', fills);
        }));
        li.insertBefore(h('div', { class: 'got-results' }, h('span', { class: 'label' }, `Got ${plural(rest.length, 'tool result')} for calls made before:`), ul), body);
        for (const x of rest) {
          fills.get(x.tool_call_id)(x);
          if (x.error) li.classList.add('error');
        }
      },
    };
  }

  return {
    el,
    add,
    move: (dir) => moveFocus([...list.children], dir),
    // highlight brings a step to view; mark marks it (a divergence).
    highlight(seq, mark) {
      const it = items.get(seq);
      if (mark) {
        for (const x of items.values()) x.li.classList.remove('diverged');
        if (it) it.li.classList.add('diverged');
      }
      if (!it) return false;
      it.li.scrollIntoView({ block: 'center' });
      it.li.focus({ preventScroll: true });
      return true;
    },
  };
}

// results are the tool results of a result ([] for another kind).
function results(res) {
  return (res && res.kind === 'tool_results' && res.data && Array.isArray(res.data.results)) ? res.data.results : [];
}

function bubble(who, text) {
  return h('div', { class: 'bubble user' }, h('span', { class: 'who' }, who), h('pre', {}, text));
}

// modelView shows a model call: what it summarizes (a compaction), then
// the reply once it came; its fill reports a model error.
function modelView(body, a) {
  if (isCompaction(a)) {
    const m = a.describe.match(/messages (\d+)-(\d+)/);
    body.append(h('p', { class: 'hint' }, m ? `Summarized messages ${m[1]} to ${m[2]} so that the conversation fits the model's context.` : a.describe));
  }
  const got = h('div', { class: 'reply' }, h('span', { class: 'label' }, 'Waiting for the reply…'));
  body.append(got);
  return (res) => {
    const d = res.data || {};
    if (res.kind !== 'reply') {
      got.replaceChildren(h('span', { class: 'label' }, 'Got '), h('code', {}, res.describe));
      return false;
    }
    const out = [];
    if (d.error) out.push(h('p', { class: 'err' }, h('strong', {}, 'Model error: '), d.error));
    if (d.text) out.push(h('span', { class: 'label' }, 'Reply'), h('pre', { class: 'reply-text' }, d.text));
    const wants = (d.tool_calls || []).map((c) => c.name);
    if (wants.length) out.push(h('p', { class: 'label' }, `Asked for ${plural(wants.length, 'tool call')}: ${wants.join(', ')}`));
    if (!d.text && !wants.length && !d.error) out.push(h('span', { class: 'label' }, 'An empty reply'));
    got.replaceChildren(...out);
    return Boolean(d.error);
  };
}

// callView is one tool call: a toggle whose line shows the call and its
// result in short, and the arguments and result in full below it.
function callView(c, key, kind, calls) {
  const panelID = `call-${key}`;
  const args = JSON.stringify(c.arguments);
  const gist = h('span', { class: 'call-result' }, kind === 'external' ? '→ waiting for an answer' : '→ running…');
  const full = h('div', { class: 'call-got' }, h('span', { class: 'label' }, kind === 'external' ? 'Waiting for an answer' : 'Running'));
  const button = h('button', { type: 'button', class: 'call-toggle', 'aria-expanded': 'false', 'aria-controls': panelID },
    h('span', { class: 'chev', 'aria-hidden': 'true' }), h('code', { class: 'call-name' }, c.name),
    h('code', { class: 'call-args' }, firstWords(args, 80)), gist);
  const panel = h('div', { class: 'call-body', id: panelID, hidden: true },
    h('span', { class: 'label' }, 'Arguments'), h('pre', {}, pretty(c.arguments)), full,
    h('p', { class: 'call-id' }, `call id ${c.id}`));
  button.addEventListener('click', () => {
    const open = panel.hidden;
    panel.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
  });
  const li = h('li', { class: 'tool-call' }, button, panel);
  calls.set(c.id, (x) => {
    const text = x.error || x.result || '';
    li.classList.toggle('err', Boolean(x.error));
    gist.textContent = x.error ? `→ error: ${firstWords(text, 100)}` : `→ ${firstWords(text, 100) || '(empty)'}`;
    full.replaceChildren(h('span', { class: 'label' }, x.error ? 'Error' : `Result (${plural(text.length, 'character')})`), h('pre', {}, text));
  });
  return li;
}

// costDelta is b - a of two decimal cost strings ("" when none).
function costDelta(a, b) {
  if (!b) return '';
  const d = Number(b) - Number(a || 0);
  return d > 0 ? String(Number(d.toPrecision(6))) : '';
}

async function loadRequest(panel, runID, seq) {
  panel.replaceChildren(h('p', { class: 'hint' }, 'Loading the request…'));
  try {
    const req = await api('GET', `/v1/runs/${encodeURIComponent(runID)}/steps/${seq}/request`);
    const where = [req.provider, req.method, req.url].filter(Boolean).join(' ');
    fill(panel,
      h('p', { class: 'hint' }, `The request the ${req.role} model got (model call ${req.call}), as ${where || 'its provider'} sent it.`),
      req.headers && Object.keys(req.headers).length ? h('pre', { class: 'request-headers' }, Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join('\n')) : null,
      h('pre', { class: 'request-body' }, pretty(req.body)));
  } catch (err) {
    panel.replaceChildren(h('p', { class: 'error' }, `Could not read the request: ${errorText(err)}`));
  }
}

// rawView is the step as recorded: the core's descriptions and the
// messages it added to the conversation.
function rawView(panel, step, next) {
  const a = step.action;
  panel.append(h('dl', { class: 'raw' },
    h('dt', {}, 'Created'), h('dd', {}, timeEl(step.created)),
    step.result ? [h('dt', {}, `Result (${step.result.kind})`), h('dd', {}, h('code', {}, step.result.describe))] : null,
    a ? [h('dt', {}, `Action (${a.kind})`), h('dd', {}, h('code', {}, a.describe))] : null,
    next ? [h('dt', {}, 'Answered by'), h('dd', {}, h('code', {}, next.describe))] : null));
  if (step.messages.length) {
    panel.append(h('p', { class: 'label' }, `Added to the conversation: ${plural(step.messages.length, 'message')}`),
      h('ol', { class: 'messages' }, step.messages.map((m) => {
        const who = [m.role, m.name, m.call_id].filter(Boolean).join(' · ');
        return h('li', { class: `msg role-${m.role}${m.is_error ? ' err' : ''}` },
          h('span', { class: 'role' }, who, m.is_error ? ' · error' : ''),
          m.content ? h('pre', {}, m.content) : null,
          m.calls && m.calls.length ? h('pre', {}, m.calls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join('\n')) : null);
      })));
  }
  if (step.result && step.result.kind !== 'user_message') panel.append(h('span', { class: 'label' }, 'Result data'), h('pre', {}, pretty(step.result.data)));
}
