// Package responses is the model provider for the OpenAI Responses API
// (POST {BaseURL}/responses), through the official SDK
// (github.com/openai/openai-go/v3).
//
// Contract:
//
//   - Complete sends the conversation as input items: system messages
//     become the instructions; user text, assistant text and function
//     calls, and function_call_output items for the tools' results. The
//     tools go as function tools (strict mode off: their schemas are
//     validated by the core, not reshaped for the API).
//   - Requests are stateless: store is false and the encrypted reasoning
//     is asked for (include reasoning.encrypted_content). When a reply
//     carries reasoning items, all its output items are kept as the
//     message's opaque data (core.Opaque, provider "openai-responses"), in
//     the order the model produced them, and sent back verbatim in place
//     of the message on later requests, so the model gets its reasoning
//     back between tool calls. A reply without reasoning keeps nothing
//     extra: its text and calls say all of it.
//   - The reply: the output text (a refusal when there is no text), the
//     function calls (their call_id as the id, arguments as sent), the
//     response's status as the finish reason ("completed", or
//     "incomplete: max_output_tokens"), and the usage with cached input
//     tokens and reasoning tokens.
//   - It streams unless Options.NoStream: text, function-call arguments and
//     reasoning summaries go to the request's OnDelta as they arrive; the
//     reply is taken from the response.completed (or response.incomplete)
//     event, so it is the one the same response gives unstreamed. A stream
//     that ends without it broke off, and is retried.
//   - Retries are shell/models/internal/httpcall's, as for every provider
//     (429 with Retry-After, 5xx, transport errors, idle attempts, broken
//     streams, malformed replies); an "error" event or a failed response
//     whose code is rate_limit_exceeded or server_error is retried too,
//     any other code fails the call. 401, 403, 404 and other 4xx are
//     permanent and say what to check.
//   - The API key is read once, by New, from the variable Options.APIKeyEnv
//     names. Nothing else is read from the environment: the SDK's
//     OPENAI_* variables are ignored.
package responses
