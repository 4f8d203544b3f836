// Where a run's time went: a waterfall of its requests, one row per step
// that asked for something (a model call, tools, an answer from the
// caller, memory), a bar from the step to the next one, which holds the
// answer, with its duration and the tokens it used; above it the totals by
// kind as one stacked bar. Plain inline SVG sized in percent, so it fits
// any width. The time between an answer and the user's next message is a
// row of its own. The last request grows with the clock while the run
// works or waits.

import { fmtDuration, fmtTokens, h, plural } from './dom.js';
import { category, categoryNames, stepHeading } from './human.js';

const maxRows = 400;
const svgNS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

const pct = (v) => `${Math.max(0, Math.min(100, v)).toFixed(3)}%`;

// waterfall makes the section; show(seq) brings a step to view.
export function waterfall(show) {
  const summary = h('div', { class: 'wf-summary' });
  const axis = h('div', { class: 'wf-row wf-axis-row', 'aria-hidden': 'true' });
  const rows = h('ol', { class: 'wf-rows' });
  const note = h('p', { class: 'hint' });
  const el = h('section', { class: 'waterfall', 'aria-labelledby': 'waterfall-title' },
    h('h2', { id: 'waterfall-title', tabindex: '-1' }, 'Where the time went'), summary, axis, rows, note);
  const steps = [];
  let run = null;
  let pending = null;
  let timer = null;

  function schedule() {
    if (!pending) pending = setTimeout(() => { pending = null; render(); }, 30);
  }

  // open reports whether the run's last request is still under way.
  const open = () => Boolean(run && ['running', 'awaiting_tool_results'].includes(run.status));

  function bars() {
    const t0 = Date.parse(steps[0].created);
    const out = [];
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i];
      const next = steps[i + 1];
      let cat = category(s.action);
      if (!cat && s.action && s.action.kind === 'complete' && next) cat = 'user';
      if (!cat) continue;
      const start = Date.parse(s.created);
      let end = start;
      let growing = false;
      if (next) end = Date.parse(next.created);
      else if (open()) {
        end = Math.max(start, Date.now());
        growing = true;
      } else if (run) end = Math.max(start, Date.parse(run.updated));
      const tokens = next ? next.usage.prompt_tokens + next.usage.completion_tokens - s.usage.prompt_tokens - s.usage.completion_tokens : 0;
      const heading = cat === 'user' ? 'Waited for the user\'s next message' : stepHeading(s, steps[i - 1], null);
      out.push({ seq: s.seq, cat, start: start - t0, end: end - t0, tokens, growing, heading });
    }
    return out;
  }

  function render() {
    if (steps.length === 0) return;
    const all = bars();
    if (all.length === 0) {
      summary.replaceChildren(h('p', { class: 'hint' }, 'No requests yet.'));
      axis.replaceChildren();
      rows.replaceChildren();
      note.textContent = '';
      return;
    }
    const t0 = Date.parse(steps[0].created);
    const lastAt = Date.parse(steps[steps.length - 1].created) - t0;
    const span = Math.max(1, lastAt, ...all.map((b) => b.end));
    renderSummary(all, span);
    axis.replaceChildren(h('span'), axisSVG(span), h('span'));
    rows.replaceChildren(...all.slice(0, maxRows).map((b) => row(b, span)));
    note.textContent = all.length > maxRows ? `The first ${maxRows} of ${all.length} requests are shown.` : '';
  }

  function renderSummary(all, span) {
    const totals = new Map();
    for (const b of all) {
      const t = totals.get(b.cat) || { ms: 0, n: 0, tokens: 0 };
      t.ms += b.end - b.start;
      t.n += 1;
      t.tokens += b.tokens;
      totals.set(b.cat, t);
    }
    const sum = [...totals.values()].reduce((a, t) => a + t.ms, 0) || 1;
    let x = 0;
    const segs = [];
    for (const [cat, t] of totals) {
      const w = (t.ms / sum) * 100;
      segs.push(svg('rect', { class: `seg cat-${cat}`, x: pct(x), y: 0, width: pct(Math.max(w, 0.3)), height: 14 }));
      x += w;
    }
    const name = (cat) => (cat === 'user' ? 'Waiting for the user' : categoryNames[cat]);
    summary.replaceChildren(
      h('p', { class: 'wf-total' }, h('strong', {}, fmtDuration(span)), open() ? ' so far, ' : ' from the first step to the last, ',
        `${plural(all.length, 'request')}`),
      svg('svg', { class: 'wf-stack', width: '100%', height: 14, role: 'img', 'aria-label': 'time by kind of request' }, ...segs),
      h('ul', { class: 'wf-legend' }, [...totals].map(([cat, t]) => h('li', { class: `cat-${cat}` },
        h('span', { class: 'swatch', 'aria-hidden': 'true' }),
        `${name(cat)}: ${fmtDuration(t.ms)} (${Math.round((t.ms / sum) * 100)}%)`,
        cat === 'user' ? '' : `, ${plural(t.n, cat === 'model' || cat === 'compact' ? 'call' : 'request')}`,
        t.tokens ? `, ${fmtTokens(t.tokens)} tokens` : ''))));
  }

  function row(b, span) {
    const d = b.end - b.start;
    const label = h('a', { href: `#step-${b.seq}`, class: 'wf-label', title: b.heading, onclick: (e) => { e.preventDefault(); show(b.seq); } },
      h('span', { class: 'seq' }, `#${b.seq}`), ' ', b.heading);
    const bar = svg('svg', { class: 'wf-bar', width: '100%', height: 16, 'aria-hidden': 'true' },
      svg('rect', { class: 'track', x: 0, y: 7, width: '100%', height: 2 }),
      svg('rect', { class: `bar cat-${b.cat}${b.growing ? ' growing' : ''}`, x: pct((b.start / span) * 100), y: 2,
        width: pct(Math.max((d / span) * 100, 0.4)), height: 12, rx: 2 }));
    const val = `${fmtDuration(d)}${b.growing ? ' so far' : ''}${b.tokens ? ` · ${fmtTokens(b.tokens)} tok` : ''}`;
    return h('li', { class: `wf-row cat-${b.cat}` }, label, bar, h('span', { class: 'wf-val' }, val));
  }

  function axisSVG(span) {
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => svg('text', {
      x: pct(f * 100), y: 12, 'text-anchor': f === 0 ? 'start' : f === 1 ? 'end' : 'middle', class: f === 0.25 || f === 0.75 ? 'minor' : 'major',
    }, f === 0 ? '0' : fmtDuration(span * f)));
    return svg('svg', { class: 'wf-axis', width: '100%', height: 16 }, ...ticks);
  }

  function tick() {
    clearInterval(timer);
    timer = open() ? setInterval(render, 1000) : null;
  }

  return {
    el,
    add(step) {
      steps.push(step);
      schedule();
    },
    setRun(r) {
      run = r;
      tick();
      schedule();
    },
    close() {
      clearInterval(timer);
      clearTimeout(pending);
    },
  };
}
