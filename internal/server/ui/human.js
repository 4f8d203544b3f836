// What the page says of runs and steps in words, instead of the core's
// internal descriptions (which stay one click away, under a step's
// "Raw" toggle).

import { firstWords, fmtIn } from './dom.js';

const failures = {
  max_steps: 'hit the step limit',
  max_turns: 'hit the turn limit',
  loop: 'stuck in a loop',
  cycle: 'stuck in a cycle',
  invalid_output: 'gave no valid output',
  state_too_large: 'the conversation grew too large',
  model_error: 'the model failed',
  budget_exhausted: 'its budget is used up',
  context_overflow: 'the conversation no longer fits the model',
  cancelled: 'cancelled',
};

// failureTitle is a failure code in words: "Failed: its budget is used up".
export function failureTitle(code, status) {
  if (status === 'cancelled' || code === 'cancelled') return 'Cancelled';
  return `Failed: ${failures[code] || (code || 'failed').replaceAll('_', ' ')}`;
}

// callNames names a step's calls: "read_file", "read_file ×2, search",
// "a, b and 3 more".
export function callNames(calls) {
  const counts = new Map();
  for (const c of calls || []) counts.set(c.name, (counts.get(c.name) || 0) + 1);
  const names = [...counts].map(([n, k]) => (k > 1 ? `${n} ×${k}` : n));
  if (names.length <= 3) return names.join(', ') || 'no tools';
  return `${names.slice(0, 2).join(', ')} and ${names.length - 2} more`;
}

// isCompaction reports whether a model step summarizes the conversation
// (the core describes it "compact ROLE summarize messages A-B").
export function isCompaction(a) {
  return Boolean(a && a.kind === 'model' && a.describe.startsWith('compact '));
}

// actionPhrase is what a step decided, in the past tense.
export function actionPhrase(step, prev) {
  const a = step.action;
  switch (a.kind) {
    case 'model': {
      if (isCompaction(a)) return 'Compacted the conversation';
      const who = a.role && a.role !== 'primary' ? `the ${a.role} model` : 'the model';
      if (prev && step.counters.corrections > prev.counters.corrections) return `Asked ${who} again, to correct its reply`;
      return `Asked ${who}`;
    }
    case 'tools': return `Ran ${callNames(a.calls)}`;
    case 'external': return `Paused for ${callNames(a.calls)}`;
    case 'complete': return 'Answered';
    case 'fail': return failureTitle(a.code, step.status);
    case 'memory_search': return a.describe.startsWith('recall ') ? 'Recalled from memory' : 'Searched memory';
    case 'memory_create': return 'Saved to memory';
    case 'memory_traverse': return 'Followed links in memory';
    default: return a.kind.replaceAll('_', ' ');
  }
}

// stepHeading is a step's heading: what came in when it is the user's
// message, and what the step decided.
export function stepHeading(step, prev, parent) {
  const a = step.action;
  const gotMessage = step.result && step.result.kind === 'user_message';
  if (!a) {
    if (step.seq === 0 && parent) return `Forked from step ${parent.step} of its parent`;
    return gotMessage || step.seq === 0 ? 'Got the user\'s message' : 'Took a result';
  }
  const did = actionPhrase(step, prev);
  if (!gotMessage) return did;
  return `Got the user's message, then ${did[0].toLowerCase()}${did.slice(1)}`;
}

// category is what a step's request spends its time on, for the waterfall
// ("" for a step that asks for nothing: the start, an answer, a failure).
export function category(a) {
  if (!a) return '';
  switch (a.kind) {
    case 'model': return isCompaction(a) ? 'compact' : 'model';
    case 'tools': return 'tools';
    case 'external': return 'external';
    case 'memory_search':
    case 'memory_create':
    case 'memory_traverse': return 'memory';
    default: return '';
  }
}

// categoryNames name the waterfall's categories.
export const categoryNames = {
  model: 'Model calls',
  compact: 'Compaction',
  tools: 'Tools',
  external: 'Waiting for answers',
  memory: 'Memory',
};

// statusWhy is a run's status explained in a few words, for the list.
export function statusWhy(run) {
  switch (run.status) {
    case 'running': return run.cancel_requested ? `cancelling: ${run.cancel_requested}` : 'working';
    case 'awaiting_tool_results': return 'paused: waiting for answers';
    case 'stalled': {
      const times = run.stall_attempts > 1 ? `, stalled ${run.stall_attempts} times` : '';
      return `next try ${run.retry_at ? fmtIn(run.retry_at) : 'now'}${times}: ${run.reason || 'no reason recorded'}`;
    }
    case 'failed':
    case 'cancelled':
      if (run.failure) return run.failure.reason || failureTitle(run.failure.code, run.status);
      return run.reason || '';
    case 'interrupted': return run.reason || 'its driver stopped; another worker takes it over';
    case 'completed': {
      const said = run.answer ? `: ${firstWords(run.answer, 60)}` : '';
      return `${run.turns > 1 ? `answered turn ${run.turns}` : 'answered'}${said}`;
    }
    default: return run.reason || '';
  }
}
