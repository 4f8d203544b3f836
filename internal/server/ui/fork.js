// The fork form of one step: POST /v1/runs/{id}/fork {"at": SEQ, ...}.
// The new run starts from step SEQ's state, whose request (the step's
// action) gets the result given here instead of the one it got, or is
// performed again when none is given.

import { agents, api, errorText } from './api.js';
import { h } from './dom.js';

// forkForm builds the form for step (its recorded answer is next, the
// result of step seq+1, or null); done(run) gets the new run; close()
// closes the form.
export function forkForm(runID, step, next, done, close) {
  const seq = step.seq;
  const kind = step.action.kind;
  const gives = kind === 'tools' || kind === 'external' ? 'result' : kind === 'model' ? 'reply' : '';
  const pfx = `fork-${seq}`;
  const err = h('p', { class: 'error', role: 'alert' });
  const fields = h('div', { class: 'fork-fields' });
  let resultText = null;
  let replyText = null;
  let callsText = null;

  if (gives === 'result') {
    resultText = h('textarea', { id: `${pfx}-result`, rows: '6', spellcheck: 'false', class: 'code' });
    resultText.value = JSON.stringify(recordedResults(step, next), null, 2);
    fields.append(h('label', { for: resultText.id }, 'Tool results (JSON: one entry per call, ',
      h('code', {}, '{"tool_call_id", "result"}'), ' or ', h('code', {}, '{"tool_call_id", "error"}'), ')'), resultText);
  } else if (gives === 'reply') {
    const data = next && next.kind === 'reply' && next.data ? next.data : {};
    replyText = h('textarea', { id: `${pfx}-reply`, rows: '4' });
    replyText.value = data.text || '';
    callsText = h('textarea', { id: `${pfx}-calls`, rows: '3', spellcheck: 'false', class: 'code' });
    callsText.value = JSON.stringify(data.tool_calls || [], null, 2);
    fields.append(h('label', { for: replyText.id }, 'Model reply'), replyText,
      h('label', { for: callsText.id }, 'Tool calls in the reply (JSON: ', h('code', {}, '[{"id", "name", "arguments"}]'),
        ', arguments as a JSON text; [] for none)'), callsText);
  }

  const give = h('input', { type: 'radio', name: `${pfx}-mode`, id: `${pfx}-give`, value: 'give', checked: Boolean(gives) });
  const again = h('input', { type: 'radio', name: `${pfx}-mode`, id: `${pfx}-again`, value: 'again', checked: !gives });
  const modes = h('fieldset', { class: 'modes' },
    h('legend', {}, `Step ${seq}'s request (${step.action.describe}) gets`),
    gives ? h('div', {}, give, h('label', { for: give.id }, gives === 'result' ? 'the tool results below' : 'the model reply below')) : null,
    h('div', {}, again, h('label', { for: again.id }, 'nothing: it is performed again, live')));
  const syncMode = () => { fields.hidden = !give.checked; };
  give.addEventListener('change', syncMode);
  again.addEventListener('change', syncMode);
  syncMode();

  const agentSel = h('select', { id: `${pfx}-agent` }, h('option', { value: '' }, 'the run\'s agent'));
  agents().then((names) => agentSel.append(...names.map((n) => h('option', { value: n }, n)))).catch(() => {});
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create fork');

  const form = h('form', { class: 'fork-form', 'aria-label': `Fork at step ${seq}` },
    h('p', { class: 'hint' }, `A new run starts from the state of step ${seq}, before its request was answered. `,
      next ? `The original got what step ${seq + 1} shows; edit it to see what would have happened.` : 'The original has no answer yet.'),
    modes, fields,
    h('div', { class: 'row' }, h('label', { for: agentSel.id }, 'Agent'), agentSel),
    h('div', { class: 'row' }, submit, h('button', { type: 'button', onclick: close }, 'Cancel')),
    err);

  form.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      close();
    }
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    const body = { at: seq };
    try {
      if (give.checked && gives === 'result') body.result = JSON.parse(resultText.value);
      if (give.checked && gives === 'reply') {
        body.reply = { text: replyText.value };
        const calls = JSON.parse(callsText.value || '[]');
        if (calls.length) body.reply.tool_calls = calls;
      }
    } catch (x) {
      err.textContent = `Not valid JSON: ${x.message}`;
      return;
    }
    if (agentSel.value) body.agent = agentSel.value;
    submit.disabled = true;
    try {
      done(await api('POST', `/v1/runs/${encodeURIComponent(runID)}/fork`, body));
    } catch (x) {
      err.textContent = `The server refused the fork: ${errorText(x)}`;
      submit.disabled = false;
    }
  });
  return { form, focus: () => (resultText || replyText || again).focus() };
}

// recordedResults is what the step's calls got, as POST results takes it:
// from the next step when there is one, else an empty result per call.
function recordedResults(step, next) {
  const got = next && next.data && Array.isArray(next.data.results) ? next.data.results : null;
  if (got) {
    return got.map((r) => (r.error ? { tool_call_id: r.tool_call_id, error: r.error } : { tool_call_id: r.tool_call_id, result: r.result || '' }));
  }
  return (step.action.calls || []).map((c) => ({ tool_call_id: c.id, result: '' }));
}
