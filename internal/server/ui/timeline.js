// A run's timeline: one item per step. A step holds the result the
// previous step's request got (or a message the user sent), the messages
// it added to the conversation, and its own decision (the action: a
// request, or the end). So the answer to step N's request shows in step
// N+1, and also next to step N's calls.

import { fmtDuration, h, moveFocus, pretty, statusBadge, timeEl } from './dom.js';

// forkable are the action kinds whose request a fork can answer or redo.
const forkable = ['model', 'tools', 'external', 'memory_search', 'memory_create', 'memory_traverse'];

// timeline makes the list; openFork(step, next, slot, button) opens a
// step's fork form in slot; start() describes step 0 (a fork starts from
// its parent's state).
export function timeline(openFork, start) {
  const list = h('ol', { class: 'steps' });
  const el = h('section', { class: 'timeline', 'aria-labelledby': 'timeline-title' },
    h('h2', { id: 'timeline-title' }, 'Timeline'), list);
  const items = new Map();
  let last = null;

  function add(step) {
    if (items.has(step.seq)) return;
    const prev = last && last.step.seq < step.seq ? last.step : null;
    const item = render(step, prev);
    items.set(step.seq, item);
    list.append(item.li);
    if (last && step.result) last.answer(step.result);
    last = item;
  }

  function render(step, prev) {
    const seq = step.seq;
    const a = step.action;
    const titleID = `step-${seq}-title`;
    const bad = isError(step);
    const li = h('li', { class: `step${bad ? ' error' : ''}`, id: `step-${seq}`, tabindex: '-1', 'aria-labelledby': titleID, 'data-seq': seq });
    const meta = h('p', { class: 'meta' }, timeEl(step.created));
    if (prev) {
      meta.append(' · ', h('span', { title: 'time since the previous step' }, `+${fmtDuration(Date.parse(step.created) - Date.parse(prev.created))}`));
      const dp = step.usage.prompt_tokens - prev.usage.prompt_tokens;
      const dc = step.usage.completion_tokens - prev.usage.completion_tokens;
      if (dp || dc) meta.append(' · ', h('span', { title: 'tokens this step added: prompt, completion' }, `+${dp} / +${dc} tokens`));
    }
    if (step.status !== 'running') {
      const badge = statusBadge(step.status);
      badge.title = 'the run\'s status after this step';
      meta.append(' · ', badge);
    }
    if (bad) meta.append(' · ', h('strong', { class: 'err-tag' }, 'error'));
    li.append(h('div', { class: 'step-head' },
      h('h3', { id: titleID },
        h('span', { class: 'seq' }, `#${seq}`), ' ',
        h('span', { class: `kind kind-${a ? a.kind : 'start'}` }, a ? a.kind.replaceAll('_', ' ') : 'start'), ' ',
        h('code', { class: 'describe' }, a ? a.describe : start())),
      meta));
    if (step.result) li.append(resultView(step.result, prev ? prev.seq : seq - 1));
    if (step.messages.length) li.append(messagesView(step.messages));
    const slots = new Map();
    if (a) li.append(actionView(a, slots));
    let nextResult = null;
    if (a && forkable.includes(a.kind)) {
      const slot = h('div', { class: 'fork-slot', id: `fork-${seq}` });
      const button = h('button', { type: 'button', class: 'fork-button', 'aria-expanded': 'false', 'aria-controls': `fork-${seq}`,
        'aria-label': `Fork here: a new run from step ${seq}`,
        onclick: () => openFork(step, nextResult, slot, button) }, 'Fork here…');
      li.append(h('div', { class: 'step-actions' }, button), slot);
    }
    return {
      li, step,
      // answer shows the result step seq's request got (from step seq+1).
      answer(result) {
        nextResult = result;
        const rs = (result.data && result.data.results) || [];
        for (const r of rs) {
          const slot = slots.get(r.tool_call_id);
          if (!slot) continue;
          slot.classList.toggle('err', Boolean(r.error));
          slot.replaceChildren(h('span', { class: 'label' }, r.error ? '→ error' : '→ result'), h('pre', {}, r.error || r.result || ''));
        }
      },
    };
  }

  return {
    el,
    add,
    move: (dir) => moveFocus([...list.children], dir),
    // highlight marks a step (a divergence) and brings it to the focus.
    highlight(seq) {
      for (const it of items.values()) it.li.classList.remove('diverged');
      const it = items.get(seq);
      if (!it) return false;
      it.li.classList.add('diverged');
      it.li.scrollIntoView({ block: 'center' });
      it.li.focus({ preventScroll: true });
      return true;
    },
  };
}

// isError reports whether a step failed, or shows a failure: a fail
// action, a failed tool call, a model or memory error.
function isError(step) {
  if (step.status === 'failed' || (step.action && step.action.kind === 'fail')) return true;
  if (step.messages.some((m) => m.is_error)) return true;
  const d = step.result && step.result.data;
  return Boolean(d && (d.error || (Array.isArray(d.results) && d.results.some((r) => r.error))));
}

function resultView(result, from) {
  const d = result.data || {};
  if (result.kind === 'user_message') {
    // It answers no request: the user sent it to the run.
    return h('div', { class: 'result' }, h('p', {}, h('span', { class: 'label' }, 'Got the user\'s message:')), h('pre', {}, d.content || ''));
  }
  const box = h('div', { class: 'result' },
    h('p', {}, h('span', { class: 'label' }, `Got (the answer to step ${from}'s request): `), h('code', {}, result.describe)));
  if (Array.isArray(d.results)) {
    box.append(h('ul', { class: 'tool-results' }, d.results.map((r) => h('li', { class: r.error ? 'err' : '' },
      h('code', {}, r.tool_call_id), r.error ? ' error: ' : ' result: ', h('pre', {}, r.error || r.result || '')))));
  } else if (result.kind === 'reply') {
    // The conversation below shows the reply as the core took it.
    if (d.error) box.append(h('p', { class: 'err' }, `Model error: ${d.error}`));
    box.append(h('details', {}, h('summary', {}, 'The reply as received'), h('pre', {}, pretty(d))));
  } else {
    box.append(h('details', {}, h('summary', {}, 'Result data'), h('pre', {}, pretty(d))));
  }
  return box;
}

function messagesView(messages) {
  return h('div', { class: 'messages' },
    h('h4', {}, 'Added to the conversation'),
    h('ol', {}, messages.map((m) => {
      const who = [m.role, m.name, m.call_id].filter(Boolean).join(' · ');
      return h('li', { class: `msg role-${m.role}${m.is_error ? ' err' : ''}` },
        h('span', { class: 'role' }, who, m.is_error ? ' · error' : ''),
        m.content ? h('pre', { class: 'content' }, m.content) : null,
        m.calls && m.calls.length ? h('ul', { class: 'calls' }, m.calls.map((c) => h('li', {},
          h('span', { class: 'label' }, 'calls '), h('code', {}, `${c.name}(${JSON.stringify(c.arguments)})`), ' ', h('span', { class: 'call-id' }, c.id)))) : null);
    })));
}

function actionView(a, slots) {
  switch (a.kind) {
    case 'tools':
    case 'external':
      return h('div', { class: 'action' },
        h('h4', {}, a.kind === 'external' ? 'Asks the caller to run' : 'Runs tools'),
        h('ul', { class: 'calls' }, (a.calls || []).map((c) => {
          const slot = h('div', { class: 'call-result' }, h('span', { class: 'label' }, a.kind === 'external' ? '→ waiting for an answer' : '→ running'));
          slots.set(c.id, slot);
          return h('li', {}, h('code', {}, c.name), ' ', h('span', { class: 'call-id' }, c.id), h('pre', {}, pretty(c.arguments)), slot);
        })));
    case 'complete':
      return h('div', { class: 'action answer' }, h('h4', {}, 'Completes with the answer'), h('pre', {}, a.answer || ''));
    case 'fail':
      return h('div', { class: 'action failure' }, h('h4', {}, `Fails: ${a.code || 'failed'}`), h('pre', {}, a.reason || ''));
    case 'model':
      return h('div', { class: 'action' }, h('p', { class: 'label' }, `Asks the ${a.role || 'primary'} model for a reply`));
    default:
      return h('div', { class: 'action' }, h('p', { class: 'label' }, a.kind.replaceAll('_', ' ')));
  }
}
