// Drives the inspector in Chromium (playwright-core, no browser download):
// run by TestInspectorInBrowser (browser_test.go), which starts the server,
// makes two paused runs of the shopper agent and reads the last line of
// stdout ("RESULT {json}").
//
// Environment: STEPWISE_URL, STEPWISE_TOKEN, CHROMIUM (the executable),
// RUN_CLICK (a paused run answered with the mouse, then forked), RUN_KEYS
// (a paused run answered with the keyboard only), RUN_STREAM (a run whose
// model streams its reply: its first pieces once the script prints
// "WATCHING STREAM", the rest once it prints "SEEN STREAM"), RUN_STALLED
// (a run stalled three times in a row, its next try an hour away),
// RUN_CHAT (a conversation that answered its first turn: "hi", "answer 1";
// a message makes it call a tool, then answer "answer 2"), RUN_PAUSED (a
// paused run left paused), RUN_RESEARCH (a completed run of the researcher
// agent: four read_file calls, a compaction at step 7, an answer at step
// 11, with prices), RUN_FAILED (a run of the tight agent, failed at step 2
// with budget_exhausted), SHOTS (the screenshot directory).
//
// Every step fails on a console error or a page error. At the end every
// kind of page is shown at 390x844 and at 1280x800, light and dark, and
// fails if anything on it is wider than the window (layoutProblems).

import { chromium } from 'playwright-core';
import path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const base = env('STEPWISE_URL');
const token = env('STEPWISE_TOKEN');
const runClick = env('RUN_CLICK');
const runKeys = env('RUN_KEYS');
const runStream = env('RUN_STREAM');
const runStalled = env('RUN_STALLED');
const runChat = env('RUN_CHAT');
const runPaused = env('RUN_PAUSED');
const runResearch = env('RUN_RESEARCH');
const runFailed = env('RUN_FAILED');
const shots = env('SHOTS');

// Root in a container cannot use Chromium's sandbox; no GPU, and no QUIC
// (the machine's network is closed).
const args = ['--disable-gpu', '--disable-quic'];
if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
const browser = await chromium.launch({ executablePath: env('CHROMIUM'), headless: true, args });
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light',
  permissions: ['clipboard-read', 'clipboard-write'] });
const page = await context.newPage();
page.setDefaultTimeout(10000);

// Refusals the test provokes on purpose show as console errors; anything
// else there (a CSP violation, an exception) fails the test.
const problems = [];
const expected = /Failed to load resource: the server responded with a status of (401|400)/;
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => {
  if (m.type() === 'error' && !expected.test(m.text())) problems.push(`console error: ${m.text()}`);
});
const requests = [];
page.on('request', (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));

let current = 'start';
function check(ok, what) {
  if (!ok) throw new Error(what);
}
async function shot(name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}
async function step(name, fn) {
  current = name;
  const t0 = Date.now();
  await fn();
  check(problems.length === 0, `problems on the page:\n  ${problems.join('\n  ')}`);
  console.log(`ok   ${name} (${Date.now() - t0} ms)`);
}
const text = (sel) => page.locator(sel).innerText();
// luminance of the body's background, 0 (black) to 1 (white).
const bodyLuminance = () => page.evaluate(() => {
  const m = getComputedStyle(document.body).backgroundColor.match(/\d+(\.\d+)?/g).map(Number);
  return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
});
const runRow = (id) => page.locator(`tbody tr[data-id="${id}"]`);

// layoutProblems lists what is wider than the window: the page itself, and
// every visible element whose box passes the window's right edge (or is
// cut by its left one) unless a box that scrolls or clips it, itself
// inside the window, holds it. An element wholly off to the left (the
// skip link) is hidden on purpose.
const layoutProblems = () => page.evaluate(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width) out.push(`the page is ${document.documentElement.scrollWidth}px wide in a ${width}px window`);
  const name = (el) => {
    const cls = typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
    return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${cls}`;
  };
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= 0) continue;
    if (r.right <= width + 0.5 && r.left >= -0.5) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden') continue;
    let held = false;
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const ps = getComputedStyle(p);
      if (ps.overflowX !== 'visible') {
        const pr = p.getBoundingClientRect();
        held = pr.right <= width + 0.5 && pr.left >= -0.5;
        break;
      }
    }
    if (!held) out.push(`${name(el)} spans ${Math.round(r.left)}..${Math.round(r.right)}px: "${(el.textContent || '').slice(0, 60)}"`);
  }
  return out;
});
async function checkLayout(what) {
  const bad = await layoutProblems();
  check(bad.length === 0, `${what}: wider than the window:\n  ${bad.slice(0, 12).join('\n  ')}`);
}

let forkID = '';
try {
  await step('the page asks for a token on 401 and keeps it for the tab', async () => {
    await page.goto(`${base}/`);
    const dialog = page.locator('#token-dialog');
    await dialog.waitFor({ state: 'visible' });
    await page.locator('#token-input').fill(token);
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'hidden' });
    await runRow(runClick).waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'stepwise_token');
    check(cookie && decodeURIComponent(cookie.value) === token && cookie.sameSite === 'Strict' && cookie.path === '/', `the token cookie: ${JSON.stringify(cookie)}`);
    check(await page.evaluate(() => sessionStorage.getItem('stepwise_token')) !== null, 'the token is not in sessionStorage');
  });

  await step('the list reads at a glance: input, agent, status and why, tokens and cost; ids short and copied', async () => {
    const row = runRow(runResearch);
    const link = await row.locator('.row-link').innerText();
    check(link.startsWith('Which dessert is the cheapest on') && link.endsWith('…'), `the run is shown as ${link}`);
    check(await row.locator('.c-agent').innerText() === 'researcher', 'no agent');
    check(await row.locator('.badge').innerText() === 'completed', 'no status');
    // Tokens and cost come with the run as GET shows it, read for the rows on screen.
    await row.locator('.cost', { hasText: /^0\.00/ }).waitFor();
    check(await row.locator('.tokens').innerText() === '2.9k', `tokens: ${await row.locator('.tokens').innerText()}`);
    check(/\d/.test(await row.locator('td[data-label="Duration"]').innerText()), 'no duration');
    check(await row.locator('.id-chip code').innerText() === `…${runResearch.slice(-8)}`, 'the id is not shortened');
    check(!(await page.locator('table.runs').innerText()).includes(runResearch), 'a whole id is shown in the list');
    await row.locator('button.copy').click();
    await row.locator('button.copy', { hasText: 'Copied' }).waitFor();
    check(await page.evaluate(() => navigator.clipboard.readText()) === runResearch, 'the copy button did not copy the id');
    check((await text('#announce')).includes('Copied run id'), 'the copy is not announced');
    const stalledWhy = await runRow(runStalled).locator('.row-why').innerText();
    check(stalledWhy.includes('next try in') && stalledWhy.includes('stalled 3 times') && stalledWhy.includes('the store is unavailable'), `the stalled row says ${stalledWhy}`);
    const failedWhy = await runRow(runFailed).locator('.row-why').innerText();
    check(failedWhy.includes('budget is used up') && failedWhy.includes('max_output_tokens'), `the failed row says ${failedWhy}`);
    check((await runRow(runPaused).locator('.row-why').innerText()).includes('waiting for answers'), 'the paused row does not say it waits');
    // The arrows move through the rows like j and k.
    const links = page.locator('tbody .row-link');
    await links.nth(0).focus();
    await page.keyboard.press('ArrowDown');
    check(await page.evaluate(() => document.activeElement === document.querySelectorAll('tbody .row-link')[1]), 'ArrowDown did not move to the next run');
    await page.keyboard.press('ArrowUp');
    check(await page.evaluate(() => document.activeElement === document.querySelectorAll('tbody .row-link')[0]), 'ArrowUp did not move back');
    await checkLayout('the list at 1280');
  });

  await step('the list shows the paused runs at 1280x800 in light colours', async () => {
    for (const id of [runClick, runKeys]) {
      const badge = await runRow(id).locator('.badge').innerText();
      check(badge === 'awaiting tool results', `run ${id} shows ${badge}`);
    }
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 1280, `the list is ${width}px wide, wider than the window`);
    check(await bodyLuminance() > 0.8, 'the light page is not light');
    await shot('list-light');
  });

  await step('keyboard: "/" focuses the filter, j moves through runs, Enter opens one', async () => {
    await page.evaluate(() => document.activeElement.blur());
    await page.keyboard.press('/');
    check(await page.evaluate(() => document.activeElement.id) === 'f-agent', '"/" did not focus the agent filter');
    await page.keyboard.press('Tab'); // to the Filter button, out of the text field
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press('j');
      if (await page.evaluate((id) => document.activeElement.closest('tr')?.dataset.id === id, runKeys)) break;
    }
    check(await page.evaluate((id) => document.activeElement.closest('tr')?.dataset.id === id, runKeys), 'j never reached the run');
    await page.keyboard.press('Enter');
    await page.locator('#pending').waitFor({ state: 'visible' });
    check(page.url().endsWith(`#/runs/${runKeys}`), `Enter opened ${page.url()}`);
  });

  await step('refused answers show the server\'s message', async () => {
    await page.locator('#answers').fill('[{"tool_call_id": "nope", "result": "x"}]');
    await page.getByRole('button', { name: 'Send answer' }).click();
    const alert = page.locator('#pending [role=alert]');
    await alert.filter({ hasText: 'invalid_results' }).waitFor();
    check((await alert.innerText()).includes('400'), `the alert: ${await alert.innerText()}`);
    check(await page.locator('#run-status').innerText() === 'awaiting tool results', 'a refused answer changed the status');
  });

  await step('keyboard only: Tab reaches Approve, Enter answers, the run completes', async () => {
    await page.locator('#run-title').focus();
    let reached = false;
    for (let i = 0; i < 30 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => (document.activeElement.getAttribute('aria-label') || '').startsWith('Approve approve'));
    }
    check(reached, 'Tab never reached the Approve button');
    const ring = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    check(ring !== 'none', 'the focused Approve button shows no focus ring');
    await shot('approve-focused');
    await page.keyboard.press('Enter');
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    check(await text('#run-answer') === 'Bought the lamp.', 'no answer shown');
    check(await page.locator('#pending').isHidden(), 'the pending panel is still shown');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    check(await page.evaluate(() => document.activeElement.id) === 'step-1', 'j does not move through the steps');
  });

  await step('approve with the mouse and watch the run complete live, without a reload', async () => {
    await page.goto(`${base}/#/runs/${runClick}`);
    await page.locator('#pending').waitFor({ state: 'visible' });
    await page.locator('#live', { hasText: 'live' }).waitFor();
    check(await page.locator('.steps > li').count() === 3, 'a paused shopper run has steps 0 to 2');
    await page.evaluate(() => { window.sameDocument = true; });
    const from = requests.length;
    await shot('paused');
    await page.getByRole('button', { name: 'Approve approve (call_approve)' }).click();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await page.locator('#step-4', { hasText: 'Bought the lamp.' }).waitFor();
    await page.locator('#live', { hasText: 'ended' }).waitFor();
    check(await page.evaluate(() => window.sameDocument === true && performance.getEntriesByType('navigation').length === 1), 'the page was reloaded');
    const after = requests.slice(from);
    check(after.includes(`POST /v1/runs/${runClick}/results`), `no results posted: ${after}`);
    check(!after.some((r) => r.startsWith('GET /v1/runs/') && r.endsWith('/steps')), `steps were read again instead of streamed: ${after}`);
    check(requests.includes(`GET /v1/runs/${runClick}/events`), 'no event stream was opened');
    check(await page.locator('.steps > li').count() === 5, 'the timeline does not show steps 3 and 4');
    check((await text('#step-2 .call-result')).includes('approved'), 'step 2 does not show what its call got');
    await shot('completed-light');
  });

  await step('fork at step 2 with an edited tool result; the fork completes and links to its parent', async () => {
    await page.getByRole('button', { name: 'Fork here: a new run from step 2' }).click();
    const editor = page.locator('#fork-2-result');
    check((await editor.inputValue()).includes('"approved"'), 'the fork form is not prefilled with what step 2 got');
    await editor.fill('[{"tool_call_id": "call_approve", "error": "over budget"}]');
    await shot('fork-form');
    await page.getByRole('button', { name: 'Create fork' }).click();
    await page.waitForURL((u) => /#\/runs\/[^/]+$/.test(u.hash) && !u.hash.endsWith(runClick));
    forkID = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    const parent = page.locator('a.parent-link');
    check(await parent.getAttribute('href') === `#/runs/${runClick}`, 'the fork does not link to its parent');
    check((await parent.locator('xpath=..').innerText()).includes('at step 2'), 'the fork does not say at which step');
    await page.locator('.step.error', { hasText: 'over budget' }).first().waitFor();
    await shot('fork-completed');
    await parent.click();
    await page.locator(`.fork-list a[href="#/runs/${forkID}"]`).waitFor();
  });

  await step('replay: identical against the recorded agent, a divergence against another', async () => {
    await page.locator('#replay-button').click();
    await page.locator('.replay-result', { hasText: 'Identical' }).waitFor();
    await page.locator('#replay-agent').selectOption('quick');
    await page.locator('#replay-button').click();
    await page.locator('.replay-result', { hasText: 'Diverges at step 1' }).waitFor();
    check(await page.locator('#step-1.diverged').count() === 1, 'the divergent step is not highlighted');
    check(await page.locator('.side-by-side figure').count() === 2, 'recorded and replayed are not side by side');
    await shot('replay-divergence');
  });

  await step('a streamed reply shows as it arrives; the step after the call holds it whole', async () => {
    await page.goto(`${base}/#/runs/${runStream}`);
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await page.locator('#step-1').waitFor(); // the step that asked for the call
    console.log('WATCHING STREAM');
    const flight = page.locator('#in-flight');
    await flight.locator('pre[data-part="text"]', { hasText: 'Hello from' }).waitFor();
    check((await text('#flight-status')).includes('primary model'), `the call's status: ${await text('#flight-status')}`);
    check(await page.locator('#step-2').count() === 0, 'the reply is shown as a step before it ended');
    await shot('streaming');
    console.log('SEEN STREAM');
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await page.locator('#step-2', { hasText: 'Hello from the stream.' }).waitFor();
    await flight.waitFor({ state: 'hidden' });
    check(await text('#run-answer') === 'Hello from the stream.', 'no answer shown');
  });

  await step('a stalled run shows as stalled, with its reason, count and next try, not live', async () => {
    await page.goto(`${base}/#/runs/${runStalled}`);
    await page.locator('#live[data-state="stalled"]', { hasText: 'waiting for its next try' }).waitFor();
    const box = await text('.stall-box');
    check(box.includes('Stalled (3 times in a row)') && box.includes('next try') && box.includes('the store is unavailable'), `the stall box says ${box}`);
    check((await text('#run-status')) === 'stalled', `the badge says ${await text('#run-status')}`);
    await page.waitForTimeout(300); // the event stream opens: it must not say live
    check((await text('#live')) === 'not live: waiting for its next try', `the live marker says ${await text('#live')}`);
    await shot('stalled');
  });

  await step('a run in words: steps headed by what they did, each tool call once, the waterfall, a model request', async () => {
    await page.goto(`${base}/#/runs/${runResearch}`);
    await page.locator('#step-11').waitFor();
    await page.locator('#live', { hasText: 'ended' }).waitFor();
    const headings = await page.locator('.steps .heading').allInnerTexts();
    const want = { 0: 'Got the user\'s message', 1: 'Asked the model', 2: 'Ran read_file', 7: 'Compacted the conversation', 8: 'Asked the model', 11: 'Answered' };
    for (const [i, h] of Object.entries(want)) check(headings[i] === h, `step ${i} is headed ${JSON.stringify(headings[i])}, want ${h}`);
    const steps = await text('.timeline');
    for (const raw of ['messages=', 'model primary', 'compact helper', 'tools call_page']) check(!steps.includes(raw), `the steps show the internal ${raw}`);
    // Four calls, each shown once: its result is in the page once.
    check(await page.locator('.timeline .tool-call').count() === 4, 'not one item per tool call');
    const times = await page.evaluate(() => document.querySelector('.timeline').textContent.split('starter 10,starters,21.50').length - 1);
    check(times === 1, `the first call's result is in the steps ${times} times`);
    check((await text('#step-2 .call-result')).startsWith('→ dish,section,price_eur'), 'the call does not show its result in short');
    // A call opens and closes from the keyboard.
    const toggle = page.locator('#step-2 .call-toggle');
    await page.locator('#step-2').focus();
    await page.keyboard.press('Tab');
    check(await page.evaluate(() => document.activeElement.matches('#step-2 .call-toggle')), 'Tab from step 2 does not reach its call');
    check(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle) !== 'none', 'the focused call shows no focus ring');
    await page.keyboard.press('Enter');
    check(await toggle.getAttribute('aria-expanded') === 'true' && await page.locator('#call-2-0').isVisible(), 'Enter did not open the call');
    check((await text('#call-2-0')).includes('"path": "menu.txt"') && (await text('#call-2-0')).includes('starter 10,starters'), 'the open call lacks its arguments or result');
    await page.keyboard.press('Space');
    check(await toggle.getAttribute('aria-expanded') === 'false' && await page.locator('#call-2-0').isHidden(), 'Space did not close the call');
    // The exact request of a model call.
    const req = page.locator('#step-1 button[aria-controls="request-1"]');
    await req.click();
    await page.locator('#request-1 .request-body', { hasText: 'Which dessert is the cheapest' }).waitFor();
    check(requests.includes(`GET /v1/runs/${runResearch}/steps/1/request`), 'the request was not read from the API');
    check(await page.locator('#step-2 button[aria-controls="request-2"]').count() === 0, 'a tool step offers a model request');
    // Where the time went: a bar per request, totals by kind.
    check(await page.locator('.wf-rows .wf-row').count() === 10 && await page.locator('.wf-rows rect.bar').count() === 10, 'the waterfall does not have a bar per request');
    const legend = await text('.wf-legend');
    for (const k of ['Model calls', 'Tools', 'Compaction']) check(legend.includes(k), `the waterfall's totals lack ${k}: ${legend}`);
    check((await page.locator('.wf-row', { hasText: '#7' }).innerText()).includes('Compacted the conversation'), 'the waterfall does not name the compaction');
    check(/tok/.test(await text('.wf-rows')), 'the waterfall shows no tokens');
    const stats = await text('.stats');
    check(stats.includes('2.9k') && stats.includes('Cost') && stats.includes('Model calls'), `the totals: ${stats}`);
    await page.locator('.wf-label', { hasText: '#9' }).click();
    check(await page.evaluate(() => document.activeElement.id) === 'step-9', 'the waterfall does not lead to its step');
    await checkLayout('the run at 1280');
    await shot('research-light');
  });

  await step('a failed run shows its failure first', async () => {
    await page.goto(`${base}/#/runs/${runFailed}`);
    const box = page.locator('.failure-box');
    await box.waitFor();
    const says = await box.innerText();
    check(says.includes('Failed: its budget is used up') && says.includes('max_output_tokens is 10 tokens') && says.includes('budget_exhausted'), `the failure box says ${says}`);
    const box0 = await box.boundingBox();
    const conv = await page.locator('section.conversation').boundingBox();
    check(box0.y < conv.y, 'the failure is not above the conversation');
    await page.locator('#step-2.error').waitFor();
    check(await page.locator('#step-2 .heading').innerText() === 'Failed: its budget is used up', 'the failing step is not headed as a failure');
    await shot('failed');
  });

  await step('a conversation: Shift+Enter is a new line, Enter sends; the second turn shows live, answered', async () => {
    await page.goto(`${base}/#/runs/${runChat}`);
    const turn1 = page.locator('#turn-1');
    await turn1.locator('.bubble.answer', { hasText: 'answer 1' }).waitFor();
    check((await turn1.locator('.bubble.user').innerText()).includes('hi'), 'the first turn does not show the input');
    const box = page.locator('#message');
    await box.waitFor({ state: 'visible' });
    await page.evaluate(() => { window.sameDocument = true; });
    const from = requests.length;
    await box.focus();
    await page.keyboard.type('first line');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('second line');
    check(await box.inputValue() === 'first line\nsecond line', `after Shift+Enter the box holds ${JSON.stringify(await box.inputValue())}`);
    check(!requests.slice(from).some((r) => r.startsWith('POST')), 'Shift+Enter sent the message');
    await box.fill('How much is the desk lamp?');
    await shot('conversation-typed');
    await page.keyboard.press('Enter');
    const turn2 = page.locator('#turn-2');
    await turn2.locator('.bubble.user', { hasText: 'How much is the desk lamp?' }).waitFor();
    await turn2.locator('.bubble.answer', { hasText: 'answer 2' }).waitFor();
    check((await turn2.locator('.activity').innerText()).includes('note'), 'the second turn does not show its tool call');
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await box.waitFor({ state: 'visible' });
    check(await box.inputValue() === '', 'the box still holds the message sent');
    check(await page.evaluate(() => document.activeElement.id) === 'message', 'the focus did not come back to the box');
    check(await page.locator('.turn.queued').count() === 0, 'the message still shows as waiting to be taken');
    check(await text('#run-answer') === 'answer 2', 'the header does not show the new answer');
    const after = requests.slice(from);
    check(after.filter((r) => r === `POST /v1/runs/${runChat}/messages`).length === 1, `the message was not posted once: ${after}`);
    check(after.includes(`GET /v1/runs/${runChat}/events`), `the page did not follow the run after sending: ${after}`);
    check(await page.evaluate(() => window.sameDocument === true), 'the page was reloaded');
    await shot('conversation');
  });

  await step('dark colour scheme renders dark; the theme button overrides it', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    check(await bodyLuminance() < 0.2, 'prefers-color-scheme: dark does not darken the page');
    const fg = await page.evaluate(() => getComputedStyle(document.body).color);
    check(fg !== 'rgb(27, 29, 33)', 'the text stays dark on the dark page');
    await shot('run-dark');
    await page.locator('#theme').click(); // auto -> light
    check(await bodyLuminance() > 0.8, 'the theme button did not make the page light');
    await page.locator('#theme').click(); // light -> dark
    await page.emulateMedia({ colorScheme: 'light' });
    check(await bodyLuminance() < 0.2, 'the theme button did not make the page dark');
    await page.goto(`${base}/#/`);
    await runRow(forkID).waitFor();
    await shot('list-dark');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 1280, `the dark list is ${width}px wide`);
  });
  await step('every page at 390x844 and at 1280x800, light and dark: nothing wider than the window', async () => {
    await page.evaluate(() => localStorage.removeItem('stepwise_theme')); // the colour scheme decides again
    await page.reload();
    const pages = [
      ['list', '#/', async () => {
        // Tokens and cost are read for the rows on screen.
        await runRow(runResearch).scrollIntoViewIfNeeded();
        await runRow(runResearch).locator('.cost', { hasText: /^0\.00/ }).waitFor();
        await page.evaluate(() => window.scrollTo(0, 0));
      }],
      ['completed', `#/runs/${runResearch}`, async () => {
        await page.locator('#step-11').waitFor();
        await page.locator('#step-2 .call-toggle').click(); // long JSON and text, open
        await page.locator('#step-1 button[aria-controls="request-1"]').click();
        await page.locator('#request-1 .request-body').waitFor();
      }],
      ['paused', `#/runs/${runPaused}`, () => page.locator('#pending').waitFor()],
      ['stalled', `#/runs/${runStalled}`, () => page.locator('.stall-box').waitFor()],
      ['failed', `#/runs/${runFailed}`, () => page.locator('#step-2').waitFor()],
      ['conversation', `#/runs/${runChat}`, () => page.locator('#turn-2 .bubble.answer').waitFor()],
      ['fork', `#/runs/${forkID}`, () => page.locator('.fork-of').waitFor()],
    ];
    // Every page at phone width in both schemes, with a screenshot; at
    // 1280 every page in light, the list and a run in dark too, with
    // screenshots of those two.
    const wide = ['list', 'completed'];
    for (const [width, height, label] of [[390, 844, 'phone'], [1280, 800, 'desk']]) {
      await page.setViewportSize({ width, height });
      for (const scheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme: scheme });
        const lum = await bodyLuminance();
        check(scheme === 'dark' ? lum < 0.2 : lum > 0.8, `the ${scheme} scheme has a background of luminance ${lum}`);
        for (const [name, hash, ready] of pages) {
          if (label === 'desk' && scheme === 'dark' && !wide.includes(name)) continue;
          await page.goto(`${base}/${hash}`);
          await ready();
          await page.waitForTimeout(100); // the waterfall draws
          await checkLayout(`${name} at ${width}px, ${scheme}`);
          if (label === 'phone' || wide.includes(name)) await shot(`${label}-${name}-${scheme}`);
        }
      }
    }
  });
} catch (err) {
  console.log(`FAIL ${current}: ${err.message}`);
  await shot('failure').catch(() => {});
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(`RESULT ${JSON.stringify({ fork: forkID })}`);
