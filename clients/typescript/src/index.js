// The stepwise client: import { Client, StepwiseError } from "./index.js".
export { Client, newIdempotencyKey } from "./client.js";
export { StepwiseError } from "./errors.js";
export { SSEParser } from "./sse.js";
