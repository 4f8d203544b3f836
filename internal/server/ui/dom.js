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

// shortID is the distinguishing end of a run id: its last 8 characters
// (ids end in random letters; their start is the date).
export function shortID(id) {
  return id.length > 10 ? `…${id.slice(-8)}` : id;
}

// announce says text to screen readers (the page's live region).
export function announce(text) {
  const el = document.getElementById('announce');
  if (el) el.textContent = text;
}

// copyText puts text on the clipboard: the Clipboard API, else a selected
// text area and the copy command. It reports whether it worked.
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = h('textarea', { class: 'offscreen', readonly: true, 'aria-hidden': 'true' });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }
}

// copyButton copies value (what names it: "run id") and says so on the
// button for a moment, and to screen readers.
export function copyButton(value, what) {
  const b = h('button', { type: 'button', class: 'copy', title: `Copy ${what}: ${value}`, 'aria-label': `Copy ${what} ${value}` }, 'Copy');
  let timer = null;
  b.addEventListener('click', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    const ok = await copyText(value);
    b.textContent = ok ? 'Copied' : 'Copy failed';
    b.classList.toggle('done', ok);
    announce(ok ? `Copied ${what} ${value}` : `Could not copy the ${what}; select it and copy it by hand`);
    clearTimeout(timer);
    timer = setTimeout(() => {
      b.textContent = 'Copy';
      b.classList.remove('done');
    }, 1500);
  });
  return b;
}

// idChip shows a run id short, whole in its title, with a copy button.
export function idChip(id) {
  return h('span', { class: 'id-chip' }, h('code', { title: id }, shortID(id)), copyButton(id, 'run id'));
}

// firstWords is the start of text on one line, cut at a word near n
// characters.
export function firstWords(text, n = 80) {
  const t = (text || '').replace(/\s+/g, ' ').trim();
  if (t.length <= n) return t;
  const cut = t.lastIndexOf(' ', n);
  return `${t.slice(0, cut > n / 2 ? cut : n)}…`;
}

// fmtTokens shows a token count compactly: 834, 12.3k, 1.2M.
export function fmtTokens(n) {
  if (!Number.isFinite(n)) return '—';
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1000).toFixed(n < 1e4 ? 1 : 0)}k`;
  return `${(n / 1e6).toFixed(1)}M`;
}

// fmtCost shows a cost (a decimal string in the prices' currency) to
// about three significant digits.
export function fmtCost(cost) {
  const v = Number(cost);
  if (!cost || !Number.isFinite(v)) return '—';
  if (v >= 100) return v.toFixed(0);
  if (v >= 0.01) return v.toFixed(2);
  return v.toPrecision(2).replace(/0+$/, '');
}

// fmtWhen is a short local time: the time of day for today, else the date
// and the time.
export function fmtWhen(iso) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return '—';
  const now = new Date();
  const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
  if (d.toDateString() === now.toDateString()) return `${hm}:${pad2(d.getSeconds())}`;
  const month = d.toLocaleString('en', { month: 'short' });
  if (d.getFullYear() === now.getFullYear()) return `${month} ${d.getDate()}, ${hm}`;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
}

// whenEl is a <time> showing fmtWhen, the exact time as its title.
export function whenEl(iso) {
  return h('time', { datetime: iso || null, title: iso ? fmtTime(iso) : null }, fmtWhen(iso));
}

// fmtIn says how far a future time is: "in 59 min", "now".
export function fmtIn(iso) {
  const ms = Date.parse(iso) - Date.now();
  if (!Number.isFinite(ms)) return '';
  if (ms <= 1000) return 'now';
  return `in ${fmtDuration(ms).replace(/\.\d+ s$/, ' s')}`;
}

// runDuration is how long a run has taken: to its last update, or to now
// while it works.
export function runDuration(run) {
  const end = run.status === 'running' ? Date.now() : Date.parse(run.updated);
  return end - Date.parse(run.created);
}

// jumpTo brings the element with id into view and gives it the focus
// (the location's hash is the route, so in-page links cannot use it).
export function jumpTo(id) {
  const el = document.getElementById(id);
  if (!el) return false;
  el.scrollIntoView({ block: 'start' });
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus({ preventScroll: true });
  return true;
}

// jumpLink is a link to an element of the page (see jumpTo).
export function jumpLink(id, ...children) {
  return h('a', { href: `#${id}`, class: 'jump', onclick: (e) => { e.preventDefault(); jumpTo(id); } }, ...children);
}

// toggle is a button that shows and hides a panel (aria-expanded); fill
// makes the panel's content the first time it opens.
export function toggle(label, panelID, fill, attrs) {
  const panel = h('div', { id: panelID, class: 'toggled', hidden: true });
  const button = h('button', { type: 'button', class: 'toggle', 'aria-expanded': 'false', 'aria-controls': panelID, ...(attrs || {}) }, label);
  let filled = false;
  button.addEventListener('click', () => {
    const open = panel.hidden;
    if (open && !filled) {
      filled = true;
      fill(panel);
    }
    panel.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
  });
  return { button, panel };
}
