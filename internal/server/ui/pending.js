// The calls a paused run waits for (awaiting_tool_results): every one is
// answered in one POST /v1/runs/{id}/results. The answers editor holds the
// request body; Approve and Deny write a call's entry in it (and, when the
// run waits for one call only, send it at once).

import { api, errorText } from './api.js';
import { fill, h, pretty } from './dom.js';

// pendingPanel fills box for run; sent(run) gets the run the server
// answers with, refused(err) is told of a refusal.
export function pendingPanel(box, run, sent, refused) {
  const calls = run.pending_tool_calls;
  const err = h('p', { class: 'error', role: 'alert' });
  const editor = h('textarea', { id: 'answers', rows: String(Math.min(12, 2 + calls.length * 4)), spellcheck: 'false', class: 'code' });
  editor.value = JSON.stringify(calls.map((c) => ({ tool_call_id: c.id, result: '' })), null, 2);
  const send = h('button', { type: 'button', class: 'primary', onclick: () => post() }, calls.length === 1 ? 'Send answer' : `Send ${calls.length} answers`);
  const buttons = [send];

  // choose writes a call's answer into the editor, which then holds one
  // entry per pending call, in order: the ones edited by hand are kept,
  // others (ids of no pending call, text that is not JSON) are dropped.
  function choose(call, answer, pressed) {
    let edited = [];
    try {
      const v = JSON.parse(editor.value);
      if (Array.isArray(v)) edited = v;
    } catch {
      edited = [];
    }
    const list = calls.map((c) => {
      if (c.id === call.id) return { tool_call_id: c.id, ...answer };
      return edited.find((a) => a && typeof a === 'object' && a.tool_call_id === c.id) || { tool_call_id: c.id, result: '' };
    });
    editor.value = JSON.stringify(list, null, 2);
    for (const b of pressed.parentElement.querySelectorAll('button[aria-pressed]')) b.setAttribute('aria-pressed', String(b === pressed));
    if (calls.length === 1) post();
  }

  async function post() {
    err.textContent = '';
    let body;
    try {
      body = JSON.parse(editor.value);
    } catch (x) {
      err.textContent = `The answers are not valid JSON: ${x.message}`;
      editor.focus();
      return;
    }
    for (const b of buttons) b.disabled = true;
    try {
      sent(await api('POST', `/v1/runs/${encodeURIComponent(run.id)}/results`, body));
    } catch (x) {
      err.textContent = `The server refused the answers: ${errorText(x)}`;
      for (const b of buttons) b.disabled = false;
      refused(x);
    }
  }

  const items = calls.map((c) => {
    const approve = h('button', { type: 'button', class: 'approve', 'aria-pressed': 'false', 'aria-label': `Approve ${c.name} (${c.id})` }, 'Approve');
    const deny = h('button', { type: 'button', class: 'deny', 'aria-pressed': 'false', 'aria-label': `Deny ${c.name} (${c.id})` }, 'Deny');
    approve.addEventListener('click', () => choose(c, { result: 'approved' }, approve));
    deny.addEventListener('click', () => choose(c, { error: 'denied' }, deny));
    buttons.push(approve, deny);
    return h('li', { class: 'call' },
      h('h3', {}, h('code', {}, c.name), ' ', h('span', { class: 'call-id' }, c.id)),
      h('pre', { 'aria-label': `Arguments of ${c.id}` }, pretty(c.arguments)),
      h('div', { class: 'row' }, approve, deny));
  });

  fill(box,
    h('h2', { id: 'pending-title' }, `Waiting for ${calls.length === 1 ? 'an answer' : `${calls.length} answers`}`),
    h('p', { class: 'hint' }, 'The run is paused until the calls below are answered, all in one request. ',
      calls.length === 1 ? 'Approve or Deny sends at once; or edit the answer below and send it.' : 'Approve or Deny each call, or edit the answers, then send them.'),
    h('ol', { class: 'pending-calls' }, items),
    h('label', { for: editor.id }, 'Answers (the JSON body sent: ', h('code', {}, '{"tool_call_id", "result"}'), ' or ', h('code', {}, '{"tool_call_id", "error"}'), ' per call)'),
    editor,
    h('div', { class: 'row' }, send),
    err);
  box.hidden = false;
}
