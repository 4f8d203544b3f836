// Talking to the API: JSON in and out, the bearer token, and the prompt
// for one when the server answers 401.

const tokenKey = 'stepwise_token';

// APIError is a refused request: its HTTP status, the server's error code
// and message.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function token() {
  return sessionStorage.getItem(tokenKey) || '';
}

// setCookie lets EventSource, which cannot send headers, carry the token;
// the server accepts the cookie on GET requests only. The value is
// URL-encoded, so any token fits in it.
function setCookie(value) {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  if (value) {
    document.cookie = `${tokenKey}=${encodeURIComponent(value)}; path=/; SameSite=Strict${secure}`;
  } else {
    document.cookie = `${tokenKey}=; path=/; SameSite=Strict; Max-Age=0${secure}`;
  }
}

let asking = null;

// askToken shows the token dialog once, however many requests wait for it.
function askToken(refused) {
  if (asking) return asking;
  const dialog = document.getElementById('token-dialog');
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  const why = document.getElementById('token-why');
  if (refused) why.textContent = 'The server refused the token this tab had. Enter a valid one; it is kept for this tab only.';
  asking = new Promise((resolve) => {
    const done = (e) => {
      e.preventDefault();
      const v = input.value.trim();
      if (!v) return;
      sessionStorage.setItem(tokenKey, v);
      setCookie(v);
      input.value = '';
      form.removeEventListener('submit', done);
      dialog.close();
      asking = null;
      resolve();
    };
    form.addEventListener('submit', done);
    // Escape would close the dialog and leave the page waiting: keep it open.
    dialog.oncancel = (e) => e.preventDefault();
    dialog.showModal();
    input.focus();
  });
  return asking;
}

// api calls the API and returns its JSON; a refusal throws APIError. A 401
// asks for a token and tries again.
export async function api(method, path, body) {
  for (;;) {
    const headers = { Accept: 'application/json' };
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    // Every POST says JSON, with a body or not: the server refuses a
    // state-changing request that does not (another site's page cannot).
    if (body !== undefined || method === 'POST') headers['Content-Type'] = 'application/json';
    let resp;
    try {
      resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      throw new APIError(0, 'network', `the server did not answer: ${err.message}`);
    }
    if (resp.status === 401) {
      if (t) {
        sessionStorage.removeItem(tokenKey);
        setCookie('');
      }
      await askToken(Boolean(t));
      continue;
    }
    let data = null;
    const text = await resp.text();
    if (text) {
      try { data = JSON.parse(text); } catch { data = null; }
    }
    if (!resp.ok) {
      const e = (data && data.error) || {};
      throw new APIError(resp.status, e.code || `http_${resp.status}`, e.message || text || resp.statusText);
    }
    return data;
  }
}

// restoreCookie sets the cookie again from the tab's token (a reload).
export function restoreCookie() {
  const t = token();
  if (t) setCookie(t);
}

// errorText is how a refusal is shown: the server's message and code.
export function errorText(err) {
  if (err instanceof APIError) return `${err.message} (${err.status} ${err.code})`;
  return String(err && err.message ? err.message : err);
}

let agentNames = null;

// agents lists the agents of the server's directory (once per page load).
export async function agents() {
  if (!agentNames) {
    agentNames = api('GET', '/v1/agents').then((r) => r.agents || []).catch((err) => {
      agentNames = null;
      throw err;
    });
  }
  return agentNames;
}
