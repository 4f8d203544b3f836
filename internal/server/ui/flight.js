// The model call in flight: what the run's event stream says of a call
// while it runs ("calling", "delta", "retry" events; never stored). It
// shows the reply as it streams in, part by part (text, reasoning, each
// tool call's arguments), how long the call has been running and the
// retries with their reason. The step that follows holds the whole reply;
// the panel is cleared when it arrives.

import { h } from './dom.js';

export function flightPanel() {
  const status = h('p', { class: 'flight-status', id: 'flight-status' });
  const parts = h('div', { class: 'flight-parts' });
  const el = h('section', { class: 'in-flight', id: 'in-flight', hidden: true, 'aria-labelledby': 'flight-title' },
    h('h2', { id: 'flight-title' }, 'Model call in flight'), status, parts);
  let seq = -1;
  let started = 0;
  let what = '';
  let retried = '';
  let timer = null;
  const pres = new Map();

  function tick() {
    const took = Math.floor((Date.now() - started) / 1000);
    status.textContent = `${what || 'calling the model'}, for ${took} s${retried ? ` · ${retried}` : ''}`;
  }

  // start shows the call step s asked for, unless it shows already.
  function start(s) {
    if (s === seq) return;
    seq = s;
    started = Date.now();
    what = '';
    retried = '';
    pres.clear();
    parts.replaceChildren();
    el.hidden = false;
    clearInterval(timer);
    timer = setInterval(tick, 1000);
    tick();
  }

  function label(part) {
    if (part === 'text') return 'Reply';
    if (part === 'reasoning') return 'Reasoning';
    if (part.startsWith('call:')) return `Tool call ${part.slice(5) || '(unnamed)'}: arguments`;
    return part;
  }

  function clear() {
    clearInterval(timer);
    timer = null;
    seq = -1;
    el.hidden = true;
    pres.clear();
    parts.replaceChildren();
  }

  return {
    el,
    clear,
    // calling: {seq, text, started} when the call starts (or the page
    // connects during it).
    calling(ev) {
      start(ev.seq);
      what = ev.text;
      const at = Date.parse(ev.started);
      if (Number.isFinite(at)) started = Math.min(at, Date.now());
      tick();
    },
    // delta: {seq, n, part, text}, a piece of the reply.
    delta(ev) {
      start(ev.seq);
      let pre = pres.get(ev.part);
      if (!pre) {
        pre = h('pre', { class: `flight-part part-${ev.part.startsWith('call:') ? 'call' : ev.part}`, 'data-part': ev.part });
        pres.set(ev.part, pre);
        parts.append(h('div', {}, h('h3', {}, label(ev.part)), pre));
      }
      pre.textContent += ev.text;
    },
    // retry: {seq, n, text}; what the failed attempt streamed is void.
    retry(ev) {
      start(ev.seq);
      retried = ev.text;
      pres.clear();
      parts.replaceChildren();
      tick();
    },
    // stepped: step s is in; a call it answered is over.
    stepped(s) {
      if (seq >= 0 && s > seq) clear();
    },
  };
}
