// Building the page from data without ever parsing it as HTML: every text
// goes in as a text node.

// h makes an element: h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child).
// Attributes named on* become listeners; value, checked, disabled, hidden
// and selected are set as properties; null and false children are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (['value', 'checked', 'disabled', 'hidden', 'selected'].includes(k)) {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

// fill replaces el's children (with h's rules for them).
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// plural is "1 step", "2 steps".
export function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// pad2 pads a number to two digits.
const pad2 = (n) => String(n).padStart(2, '0');

// fmtTime shows an RFC 3339 time in local time, to the second.
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

// timeEl is a <time> showing fmtTime, the exact time as its title.
export function timeEl(iso) {
  return h('time', { datetime: iso || null, title: iso || null }, fmtTime(iso));
}

// fmtDuration shows milliseconds as "12 ms", "1.5 s" or "2 min 3 s".
export function fmtDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// pretty is JSON indented; a string that holds JSON is parsed first.
export function pretty(v) {
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  return JSON.stringify(v, null, 2);
}

// statusBadge is a run status as a colour-coded badge (the colour is
// never the only cue: the text says it).
export function statusBadge(status) {
  return h('span', { class: `badge status-${status || 'unknown'}` }, (status || 'unknown').replaceAll('_', ' '));
}

// runLink links to a run's page.
export function runLink(id, text) {
  return h('a', { href: `#/runs/${encodeURIComponent(id)}`, class: 'run-id' }, text || id);
}

// holderText says who drives a run.
export function holderText(holder) {
  if (!holder) return '—';
  const who = holder.host ? `${holder.host}${holder.pid ? ':' + holder.pid : ''}` : holder.owner;
  let state = holder.live ? 'live' : 'lease expired';
  if (holder.alive === false) state += ', process gone';
  return `${who} (${state})`;
}

// isTyping reports whether a key event goes to a text field (so the page's
// own keys leave it alone).
export function isTyping(e) {
  const t = e.target;
  return t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));
}

// moveFocus moves the focus dir (+1, -1) through items, from the one that
// holds it (or the first), and brings it into view.
export function moveFocus(items, dir) {
  if (items.length === 0) return;
  const at = items.findIndex((el) => el === document.activeElement || el.contains(document.activeElement));
  const next = at < 0 ? (dir > 0 ? 0 : items.length - 1) : Math.min(items.length - 1, Math.max(0, at + dir));
  items[next].focus();
  items[next].scrollIntoView({ block: 'nearest' });
}

// shortID is the distinguishing end of a run id, for tight columns.
export function shortID(id) {
  return id.length > 14 ? `…${id.slice(-10)}` : id;
}
