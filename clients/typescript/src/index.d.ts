// The types of the stepwise client (src/client.js). The API's objects come
// from api-types.d.ts, generated from internal/server/openapi.json; what
// is written here is the client's own surface.

import type {
  Answer,
  Call,
  ChatMessage,
  ConversationMessage,
  ErrorBody,
  MessageEvent,
  MessageList,
  Operations,
  Replay,
  Run,
  RunList,
  Step,
  StepRequest,
} from "./api-types.js";

export type * from "./api-types.js";

/** ErrorCode is one of the API's stable error codes (internal/server/errors.go). */
export type ErrorCode = ErrorBody["error"]["code"];

/**
 * StepwiseError is a request that failed: `status` is the HTTP status (0 when
 * no answer came), `code` the API's error code, or the client's own "network"
 * (no answer, after the retries) or "unexpected_response" (an answer that is
 * not the API's JSON).
 */
export class StepwiseError extends Error {
  constructor(status: number, code: string, message: string, options?: { retryAfter?: number; cause?: unknown });
  readonly name: "StepwiseError";
  status: number;
  code: ErrorCode | "network" | "unexpected_response";
  /** the answer's Retry-After, in milliseconds */
  retryAfter?: number;
}

export interface ClientOptions {
  /** sent as Authorization: Bearer TOKEN */
  token?: string;
  /** used instead of globalThis.fetch */
  fetch?: typeof fetch;
  /** tries after the first, for a transient failure (4) */
  retries?: number;
  /** the first retry's delay in ms, doubled each try (250) */
  retryDelay?: number;
  /** the longest delay, and the longest Retry-After honoured, in ms (10000) */
  maxRetryDelay?: number;
  /** how long to wait for an answer, in ms (30000) */
  timeout?: number;
  /** silence after which an event stream is reopened, in ms (45000) */
  idleTimeout?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface IdempotentOptions extends CallOptions {
  /** the Idempotency-Key; one is drawn when left out, and reused by the retries */
  idempotencyKey?: string;
}

export interface CreateRunOptions extends IdempotentOptions {
  agent: string;
  /** the user's message (give input or messages) */
  input?: string;
  /** a history to start from, in the OpenAI chat format */
  messages?: ChatMessage[];
  /** answer once the run leaves running, or after this long ("10s", up to "5m") */
  wait?: string;
}

export type ListRunsOptions = Operations["listRuns"]["query"] & CallOptions;
export type PageOptions = Operations["getMessages"]["query"] & CallOptions;

export interface ResumeOptions extends CallOptions {
  agent?: string;
  takeOver?: boolean;
}

export interface CancelOptions extends CallOptions {
  reason?: string;
  takeOver?: boolean;
}

export interface ForkOptions extends CallOptions {
  at: number;
  result?: Answer[];
  reply?: NonNullable<Operations["forkRun"]["body"]["reply"]>;
  agent?: string;
}

export interface ReplayOptions extends CallOptions {
  agent?: string;
}

export interface EventsOptions extends CallOptions {
  /** start after this event: the steps after its seq */
  lastEventId?: string | number;
}

/** The data of a "calling" event: a model call of step seq began. */
export interface CallingData {
  seq: number;
  text: string;
  started?: string;
}

/** The data of a "delta" event: a piece of the reply of step seq's model call. */
export interface DeltaData {
  seq: number;
  n: number;
  /** "text", "reasoning" or "call:NAME" */
  part: string;
  text: string;
}

/** The data of a "retry" event: step seq's model call is tried again. */
export interface RetryData {
  seq: number;
  n: number;
  text: string;
}

/** The data of a "progress" event: what a tool of step seq reported. */
export interface ProgressData {
  seq: number;
  text: string;
}

/** RunEvent is an event of a run's stream. */
export type RunEvent =
  | { event: "step"; id: string; data: Step }
  | { event: "run"; id?: undefined; data: Run }
  | { event: "message"; id?: undefined; data: MessageEvent }
  | { event: "end"; id?: undefined; data: Record<string, never> }
  | { event: "calling"; id?: undefined; data: CallingData }
  | { event: "delta"; id: string; data: DeltaData }
  | { event: "retry"; id: string; data: RetryData }
  | { event: "progress"; id?: undefined; data: ProgressData };

/**
 * A tool of drive's: its result is a string or any JSON value; what it
 * throws is the call's error, which the model reads.
 */
export type Tool = (args: Record<string, unknown>, call: Call) => unknown | Promise<unknown>;

export interface DriveOptions extends CallOptions {
  /** the functions that answer external calls, by tool name */
  tools?: Record<string, Tool>;
  lastEventId?: string | number;
}

export interface SayOptions extends IdempotentOptions {
  /** answers external calls the turn pauses for; without, say resolves to the paused run */
  tools?: Record<string, Tool>;
}

/** Client is a client of one stepwise server. */
export class Client {
  constructor(url?: string, options?: ClientOptions);
  readonly url: string;
  health(options?: CallOptions): Promise<{ status: string }>;
  openapi(options?: CallOptions): Promise<Operations["openAPI"]["response"]>;
  listAgents(options?: CallOptions): Promise<string[]>;
  createRun(options: CreateRunOptions): Promise<Run>;
  getRun(runId: string, options?: CallOptions): Promise<Run>;
  listRuns(options?: ListRunsOptions): Promise<RunList>;
  allRuns(options?: Omit<ListRunsOptions, "cursor">): AsyncGenerator<Run, void, undefined>;
  steps(runId: string, options?: PageOptions): Promise<Step[]>;
  allSteps(runId: string, options?: PageOptions): AsyncGenerator<Step, void, undefined>;
  stepRequest(runId: string, seq: number, options?: CallOptions): Promise<StepRequest>;
  messages(runId: string, options?: PageOptions): Promise<MessageList>;
  allMessages(runId: string, options?: PageOptions): AsyncGenerator<ConversationMessage, void, undefined>;
  postResults(runId: string, answers: Answer[], options?: IdempotentOptions): Promise<Run>;
  sendMessage(runId: string, content: string, options?: IdempotentOptions): Promise<Run>;
  resume(runId: string, options?: ResumeOptions): Promise<Run>;
  cancel(runId: string, options?: CancelOptions): Promise<Run>;
  fork(runId: string, options: ForkOptions): Promise<Run>;
  replay(runId: string, options?: ReplayOptions): Promise<Replay>;
  events(runId: string, options?: EventsOptions): AsyncGenerator<RunEvent, void, undefined>;
  drive(runId: string, options?: DriveOptions): Promise<Run>;
  say(runId: string, content: string, options?: SayOptions): Promise<Run>;
}

/** newIdempotencyKey draws a key for the Idempotency-Key header. */
export function newIdempotencyKey(): string;

/** SSEParser reads a Server-Sent Events stream, a piece at a time. */
export class SSEParser {
  push(text: string): { event: string; id: string | undefined; data: string }[];
}
