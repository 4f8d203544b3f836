// A run's conversation, turn by turn (a run is a conversation: ADR 0032):
// the user's message, what the run did for it (its model and tool calls,
// linked to their steps in the timeline), then its answer. It is read from
// the same steps as the timeline, as they come. A run that answered
// (completed) waits for the user: the box below the last turn sends the
// next message (POST /v1/runs/{id}/messages; Enter sends, Shift+Enter is a
// new line), and the page follows the run again until it answers.

import { api, errorText } from './api.js';
import { h, plural } from './dom.js';
import { actionPhrase, isCompaction } from './human.js';

// conversationView makes the section for run runID; sent(run) gets the
// run the server answers a message with.
export function conversationView(runID, sent) {
  const turns = h('ol', { class: 'turns', id: 'turns' });
  const box = h('textarea', { id: 'message', rows: '3', placeholder: 'Your next message', 'aria-describedby': 'message-keys' });
  const send = h('button', { type: 'submit', class: 'primary', id: 'send-message' }, 'Send message');
  const err = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'composer', id: 'composer', hidden: true, 'aria-label': 'Send the next message' },
    h('label', { for: box.id }, 'Your next message: the run answered and waits for it'),
    box,
    h('div', { class: 'row' }, send, h('span', { class: 'hint', id: 'message-keys' }, 'Enter sends, Shift+Enter starts a new line.')),
    err);
  const title = h('h2', { id: 'conversation-title', tabindex: '-1' }, 'Conversation');
  const el = h('section', { class: 'conversation', 'aria-labelledby': 'conversation-title' }, title, turns, form);

  // turn is the last turn: its number, item, heading, activity list and
  // state line, whether it was answered (or another began first), its
  // first and last steps, and its counts.
  let turn = null;
  let status = '';
  let sending = false;
  let refocus = false; // the box had the focus when a message was sent
  const queued = []; // {text, li}: messages sent here, not yet taken by the run

  // newTurn begins turn n (the steps' turn: what the core and stepwise
  // show count) at step seq.
  function newTurn(n, seq) {
    if (turn && !turn.answered) turn.superseded = true;
    summarize();
    const did = h('ul', { class: 'did' });
    const head = h('span', { class: 'turn-steps' });
    const li = h('li', { class: 'turn', id: `turn-${n}`, 'aria-labelledby': `turn-${n}-title` },
      h('h3', { id: `turn-${n}-title` }, `Turn ${n}`, ' ', head));
    const state = h('p', { class: 'turn-state hint' });
    li.append(state);
    turns.append(li);
    turn = { n, li, head, did, state, answered: false, superseded: false, first: seq, last: seq, models: 0, calls: 0, summary: null };
  }

  function bubble(cls, who, text) {
    return h('div', { class: `bubble ${cls}` }, h('span', { class: 'who' }, who), h('pre', {}, text));
  }

  // put adds el to the turn, before its state line.
  function put(el) {
    turn.li.insertBefore(el, turn.state);
  }

  function stepLink(seq) {
    return h('a', { href: `#step-${seq}`, class: 'seq', onclick: (e) => { e.preventDefault(); jump(seq); } }, `#${seq}`);
  }

  function jump(seq) {
    const li = document.getElementById(`step-${seq}`);
    if (!li) return;
    li.scrollIntoView({ block: 'center' });
    li.focus({ preventScroll: true });
  }

  // activity is what the run did in the turn, under the user's message:
  // made once the turn asks for something.
  function activity() {
    if (!turn.summary) {
      turn.summary = h('p', { class: 'label' });
      put(h('div', { class: 'activity' }, turn.summary, turn.did));
    }
  }

  function didItem(...children) {
    activity();
    turn.did.append(h('li', {}, ...children));
  }

  function summarize() {
    if (!turn) return;
    turn.head.textContent = turn.first === turn.last ? `step ${turn.first}` : `steps ${turn.first}–${turn.last}`;
    if (turn.summary) {
      const parts = [plural(turn.models, 'model call')];
      if (turn.calls) parts.push(plural(turn.calls, 'tool call'));
      turn.summary.textContent = `What the run did: ${parts.join(', ')}`;
    }
    if (turn.answered) turn.state.textContent = '';
    else if (turn.superseded) turn.state.textContent = 'Not answered: the user\'s next message came first.';
    else turn.state.textContent = stateText();
  }

  function stateText() {
    switch (status) {
      case 'running': return 'Working on it…';
      case 'awaiting_tool_results': return 'Waiting for the results of external tool calls.';
      case 'interrupted': return 'Interrupted before it answered.';
      case 'stalled': return 'Stalled; it tries again later.';
      default: return '';
    }
  }

  // taken removes the bubble of a message sent from here once the run has
  // it (the oldest when none has its text: the server may redact it).
  function taken(text) {
    if (queued.length === 0) return;
    let q = queued.findIndex((m) => m.text === text);
    if (q < 0) q = 0;
    queued[q].li.remove();
    queued.splice(q, 1);
  }

  // add takes the run's next step. A turn begins with the user's message
  // (the step's turn goes up): the input, a message sent to a run that
  // answered, or one sent while it worked, which it takes at its next
  // model call.
  function add(step) {
    const a = step.action;
    const r = step.result;
    const message = r && r.kind === 'user_message' ? (r.data && r.data.content) || '' : null;
    if (message !== null) taken(message);
    if (!turn || step.turn !== turn.n) {
      // The step's last user messages began the turns since the last
      // (several when messages that came while the run worked were taken
      // at once); earlier ones are tool results of a text format.
      const begun = turn ? Math.max(1, step.turn - turn.n) : 1;
      newTurn(step.turn, step.seq);
      const msgs = step.messages || [];
      const users = msgs.filter((m) => m.role === 'user').slice(-begun);
      if (step.seq === 0 && users.length > 0) {
        // The start: a history's earlier messages, folded away.
        const last = msgs.lastIndexOf(users[users.length - 1]);
        if (last > 0) {
          put(h('details', { class: 'earlier' }, h('summary', {}, `Earlier in the conversation: ${plural(last, 'message')}`),
            h('ol', {}, msgs.slice(0, last).map((m) => h('li', {}, h('span', { class: 'who' }, m.role), h('pre', {}, m.content || callsText(m)))))));
        }
        put(bubble('user', 'User', users[users.length - 1].content || ''));
      } else {
        for (const m of users) put(bubble('user', 'User', m.content || ''));
        if (users.length === 0 && message !== null) put(bubble('user', 'User', message));
      }
    } else if (message !== null) {
      // Sent while the run worked: it waits for the run's next model call.
      didItem(stepLink(step.seq), ' the user\'s next message came; the run takes it at its next model call: ', h('q', {}, message));
    }
    turn.last = step.seq;
    if (a) {
      switch (a.kind) {
        case 'model':
          if (isCompaction(a)) didItem(stepLink(step.seq), ' compacted the conversation to fit the model\'s context');
          else activity();
          turn.models += 1;
          break;
        case 'tools':
        case 'external':
          for (const c of a.calls || []) {
            turn.calls += 1;
            didItem(stepLink(step.seq), ' ', a.kind === 'external' ? 'asked the caller to run ' : 'ran ',
              h('code', {}, `${c.name}(${JSON.stringify(c.arguments)})`));
          }
          break;
        case 'complete':
          turn.answered = true;
          put(h('div', { class: 'bubble answer' }, h('span', { class: 'who' }, 'Answer ', stepLink(step.seq)), h('pre', {}, a.answer || '')));
          break;
        case 'fail':
          turn.answered = true;
          put(h('div', { class: 'bubble failure' }, h('span', { class: 'who' }, `${step.status === 'cancelled' ? 'Cancelled' : 'Failed'} (${a.code || 'failed'}) `, stepLink(step.seq)),
            h('pre', {}, a.reason || '')));
          break;
        default:
          didItem(stepLink(step.seq), ' ', actionPhrase(step, null).toLowerCase());
      }
    }
    summarize();
  }

  // setRun shows what the run's status means for the conversation: the box
  // is there while the run waits for the user (completed).
  function setRun(run) {
    status = run.status;
    const open = status === 'completed';
    const had = form.contains(document.activeElement);
    form.hidden = !open;
    if (open && refocus) {
      refocus = false;
      box.focus();
    } else if (!open && had) {
      title.focus(); // the form it was in is gone
    }
    summarize();
  }

  async function post() {
    const text = box.value;
    if (sending) return;
    if (!text.trim()) {
      err.textContent = 'Write a message first.';
      box.focus();
      return;
    }
    err.textContent = '';
    sending = true;
    send.disabled = true;
    refocus = document.activeElement === box || document.activeElement === send;
    try {
      const run = await api('POST', `/v1/runs/${encodeURIComponent(runID)}/messages`, { content: text });
      box.value = '';
      const li = h('li', { class: 'turn queued' }, bubble('user', 'User (sent: the run takes it next)', text));
      turns.append(li);
      queued.push({ text, li });
      sent(run);
    } catch (x) {
      refocus = false;
      err.textContent = `The server refused the message: ${errorText(x)}`;
      box.focus();
    } finally {
      sending = false;
      send.disabled = false;
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    post();
  });
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.ctrlKey && !e.altKey && !e.metaKey) {
      e.preventDefault();
      post();
    }
  });

  return { el, add, setRun };
}

function callsText(m) {
  return (m.calls || []).map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join('\n');
}
