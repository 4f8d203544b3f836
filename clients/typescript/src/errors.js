// StepwiseError: every failure of a request the client reports.

/**
 * StepwiseError is a request that failed: `status` is the HTTP status (0 when
 * no answer came), `code` the API's stable error code (internal/server/errors.go:
 * "not_found", "ended", "bad_request", ...) or one of the client's own,
 * "network" (no answer: the connection failed or timed out, after the
 * retries) and "unexpected_response" (an answer that is not the API's JSON,
 * such as a proxy's error page), and `message` the server's words.
 * `retryAfter` is the answer's Retry-After in milliseconds, when it gave one.
 */
export class StepwiseError extends Error {
  constructor(status, code, message, { retryAfter, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "StepwiseError";
    this.status = status;
    this.code = code;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

/** retryAfterOf reads a Retry-After header (seconds or an HTTP date) as milliseconds. */
export function retryAfterOf(headers) {
  const v = headers.get("Retry-After");
  if (v == null || v === "") return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** errorOf reads a failed answer into a StepwiseError. */
export async function errorOf(resp) {
  const retryAfter = retryAfterOf(resp.headers);
  let text = "";
  try {
    text = await resp.text();
  } catch {}
  try {
    const e = JSON.parse(text).error;
    if (e && typeof e.code === "string") {
      return new StepwiseError(resp.status, e.code, String(e.message ?? ""), { retryAfter });
    }
  } catch {}
  const snippet = text.length > 200 ? text.slice(0, 200) + "..." : text;
  return new StepwiseError(resp.status, "unexpected_response", `${resp.status} ${resp.statusText}: ${snippet}`.trim(), { retryAfter });
}
