// Replay: POST /v1/runs/{id}/replay re-drives the run offline against its
// recorded agent (or another from the server's directory) and reports the
// first step whose decision differs.

import { agents, api, errorText } from './api.js';
import { fill, h, plural } from './dom.js';

// replayBox makes the section; show(seq) brings a step to view.
export function replayBox(runID, show) {
  const sel = h('select', { id: 'replay-agent' }, h('option', { value: '' }, 'the recorded agent'));
  agents().then((names) => sel.append(...names.map((n) => h('option', { value: n }, n)))).catch(() => {});
  const out = h('div', { class: 'replay-result', role: 'status' });
  const go = h('button', { type: 'button', id: 'replay-button' }, 'Replay');
  go.addEventListener('click', async () => {
    go.disabled = true;
    fill(out, h('p', {}, 'Replaying…'));
    const body = sel.value ? { agent: sel.value } : {};
    try {
      render(await api('POST', `/v1/runs/${encodeURIComponent(runID)}/replay`, body), sel.value);
    } catch (err) {
      fill(out, h('p', { class: 'error' }, `Replay refused: ${errorText(err)}`));
    } finally {
      go.disabled = false;
    }
  });

  function render(rep, agent) {
    const against = agent ? `agent ${agent}` : 'the recorded agent';
    if (rep.identical) {
      fill(out, h('p', { class: 'ok' }, `Identical: ${plural(rep.steps, 'step')} replayed against ${against}, every decision the same.`));
      return;
    }
    const d = rep.divergence || {};
    fill(out, 
      h('p', { class: 'error' }, `Diverges at step ${d.step} (replayed against ${against}, ${plural(rep.steps, 'step')}).`),
      h('div', { class: 'side-by-side' },
        h('figure', {}, h('figcaption', {}, 'Recorded'), h('pre', {}, d.recorded || '')),
        h('figure', {}, h('figcaption', {}, 'Replayed'), h('pre', {}, d.replayed || ''))),
      d.detail ? h('p', {}, h('span', { class: 'label' }, 'Difference: '), d.detail) : null,
      h('button', { type: 'button', onclick: () => show(d.step) }, `Show step ${d.step} in the timeline`));
    show(d.step);
  }

  return h('section', { class: 'replay', 'aria-labelledby': 'replay-title' },
    h('h2', { id: 'replay-title' }, 'Replay'),
    h('div', { class: 'row' }, h('label', { for: sel.id }, 'Against'), sel, go),
    out);
}
