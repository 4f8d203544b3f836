// The inspector: a list of runs (#/) and a run's page (#/runs/ID), routed
// by the location's hash. Each view returns {close, move, focus}: close
// stops its polling and streams, move(+1/-1) moves the keyboard focus
// through its rows or steps, focus puts the focus on its heading.

import { restoreCookie } from './api.js';
import { isTyping } from './dom.js';
import { listView } from './runs.js';
import { runView } from './run.js';
import { initTheme } from './theme.js';

const app = document.getElementById('app');
let view = null;

function route(moveFocus) {
  if (view) view.close();
  app.replaceChildren();
  const hash = location.hash || '#/';
  const m = hash.match(/^#\/runs\/([^/?#]+)/);
  if (m) {
    view = runView(app, decodeURIComponent(m[1]));
  } else {
    const q = hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : '';
    view = listView(app, new URLSearchParams(q));
  }
  if (moveFocus) view.focus();
}

function onKey(e) {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isTyping(e) || !view) return;
  if (document.querySelector('dialog[open]')) return;
  switch (e.key) {
    case '/':
      if (view.filter) {
        e.preventDefault();
        view.filter();
      }
      break;
    case 'j':
    case 'k':
      e.preventDefault();
      view.move(e.key === 'j' ? 1 : -1);
      break;
    case 'ArrowDown':
    case 'ArrowUp':
      // In the list of runs, the arrows move from row to row too.
      if (document.activeElement && document.activeElement.closest('table.runs tbody')) {
        e.preventDefault();
        view.move(e.key === 'ArrowDown' ? 1 : -1);
      }
      break;
    case 'u':
      if (location.hash.startsWith('#/runs/')) location.hash = '#/';
      break;
  }
}

restoreCookie();
initTheme(document.getElementById('theme'));
document.addEventListener('keydown', onKey);
window.addEventListener('hashchange', () => route(true));
route(false);
