// Package streamed is the part of reading a streamed reply that the model
// providers share: telling the request's OnDelta of the reply's pieces
// (Deltas), and reading one streamed attempt of an SDK's event stream
// (Read).
//
// Contract:
//
//   - Deltas tells OnDelta of text, reasoning and tool-call pieces as they
//     arrive, numbering the tool calls 0, 1, ... in the order they start
//     (whatever index the wire gives them); empty pieces are not told.
//   - Read decodes a plain 2xx reply (httpcall.Plain: a server that
//     ignored "stream": true) whole; else it hands each event to the
//     provider until the provider has its reply or the stream ends. A read
//     error before the first event is the request's failure as
//     httpcall.Client.Do reported it; one after it means the stream broke
//     off (Broke), and the attempt is retried.
//   - Deltas counts the bytes of the pieces; once they pass MaxAssembled
//     (a provider checks Deltas.Err after each event; Read does when
//     Reader.Deltas is set) the attempt fails permanently: the reply is
//     too large to keep, and retrying would get it again.
//
// What is assembled from the events (the SDK's own accumulator, or the
// provider's) stays with the provider: the SDKs' types share nothing.
package streamed
