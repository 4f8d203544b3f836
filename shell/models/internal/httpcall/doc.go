// Package httpcall makes the HTTP calls of the model providers in
// shell/models: Client.Do sends one attempt (it is the HTTPDoer the SDKs
// are given, with their own retries turned off), and Client.Call retries
// whole attempts as a shell.RetryPolicy says.
//
// It also holds what every HTTP provider's New and Complete share: Open
// checks the options they all take, reads the API key from the variable
// named (nothing else of the environment) and makes the client; the Base
// it returns names the endpoint in messages and runs one request
// (Base.Complete: Call, then Explain). CheckObject vets a whole reply's
// shape for Options.Check.
//
// An attempt is everything from sending the request to the end of the
// reply, so a stream that breaks off half way is retried like a refused
// connection. Contract:
//
//   - Retried: 408, 409, 429, 5xx (529 included), transport errors (a
//     refused or reset connection, a stream cut short), an attempt that
//     receives nothing for Options.Timeout (an idle timeout: a long stream
//     that keeps sending is never cut), and a 2xx reply the provider cannot
//     use (not JSON, the wrong shape, an error event in the stream, a
//     stream that ends before the reply does).
//   - Not retried: the other statuses (Call returns the *StatusError, for
//     the provider to explain), a reply larger than MaxReply (an event
//     stream: MaxStream; refused from its Content-Length before it is
//     read when it declares one), and an
//     attempt that failed before a request was sent (a request the SDK
//     could not build): both come back wrapped as permanent.
//   - Waits: an exponential backoff with jitter (shell.RetryPolicy.Wait),
//     or the server's Retry-After (seconds or HTTP date; also
//     retry-after-ms), which the jitter only ever lengthens. No retry starts
//     later than MaxElapsed after the first attempt; a server asking for a
//     wait beyond that ends the retries at once.
//   - When the retries of a transient failure run out, Call returns a
//     *GaveUpError naming the attempts and the last failure.
//   - Before each wait, Call tells its onRetry (the request's
//     shell.ModelRequest.OnRetry) the attempt, the wait and the reason.
//   - When ctx ends, Call returns ctx.Err() at once, whether it was waiting
//     on the server, on a stream or on a backoff.
//
// Base.Render runs one attempt under a context in which Do keeps the
// request the SDK hands it and returns an error instead of sending it:
// the provider's RenderRequest (shell.RequestRenderer) is then the bytes
// its Complete sends, built by the same code. A Base opened RenderOnly
// reads no API key (its marker "[redacted:NAME]" stands in for it) and
// its Complete fails permanently.
//
// A 2xx reply that is not an event stream (a server that ignores
// "stream": true, or a request that did not ask for one) is read whole by
// Do, vetted by Options.Check, and kept: Plain returns it, so a provider
// can decode it instead of the stream.
package httpcall
