// Package openai is the model provider for OpenAI-compatible chat-completion
// endpoints: OpenAI, Azure OpenAI, Ollama, vLLM, the llama.cpp server and
// anything else that speaks POST {BaseURL}/chat/completions.
//
// Contract:
//
//   - Complete sends the conversation (and the tools, natively, when the
//     request has any) and returns the first choice as a core.ModelReply:
//     text, native tool calls with their arguments exactly as sent, finish
//     reason and token usage (cached prompt tokens and reasoning tokens
//     included).
//   - It streams ("stream": true, with the usage in the last chunk) unless
//     Options.NoStream: each piece of text, of a tool call's arguments and
//     of reasoning_content (servers that send it) goes to the request's
//     OnDelta as it arrives, and the pieces are assembled into the reply
//     the same completion gives unstreamed. A server that ignores "stream"
//     and answers a whole completion is understood too.
//   - The API key is read from the environment variable named by
//     Options.APIKeyEnv once, in New, and lives only inside the HTTP client
//     configuration; it is never logged nor put in a reply or an error.
//   - Retries follow Options.Retry (a shell.RetryPolicy; default
//     shell.DefaultModelRetry), as package shell/models/internal/httpcall
//     does them for every provider: 408, 409, 429, 5xx, transport errors,
//     an attempt that receives nothing for Options.Timeout, a stream that
//     breaks off or ends before its finish_reason, and a 2xx reply that is
//     no chat completion with a choice (not JSON, an error object, no
//     choices, an error sent in the stream: a proxy's glitch) are retried
//     after an exponential backoff scaled by a random jitter, or after the
//     server's Retry-After (seconds or HTTP date; also retry-after-ms),
//     which the jitter only ever lengthens. No retry starts later than
//     Retry.MaxElapsed after the first attempt. Each retry is reported to
//     the request's OnRetry first.
//   - When the retries of a transient failure run out, Complete returns a
//     *shell.TransientError naming the attempts and the last failure
//     ("gave up after 5 attempts (last: status 429 Too Many Requests:
//     ...)"), with the server's last Retry-After; the runner stalls the run.
//   - 401, 403, 404 and the other 4xx statuses are not retried; their errors
//     wrap shell.ErrModelPermanent and say what to check (the variable that
//     holds the key; for a 404 from a base URL with no version in its path,
//     that OpenAI-compatible servers usually serve under /v1).
//   - When ctx ends, Complete returns promptly with an error for which
//     errors.Is(err, ctx.Err()) holds, whether it was waiting on the server or
//     on a backoff.
//
// Azure: a BaseURL containing "openai.azure.com" is the resource endpoint
// (https://NAME.openai.azure.com); the key goes in the api-key header, Model is
// the deployment name used verbatim, and Options.APIVersion (default
// DefaultAzureAPIVersion) is sent as api-version. Entra ID tokens are not
// supported.
//
// Wire details worth knowing: an assistant message that only carries tool
// calls is sent without content, as the API allows; any other message whose
// content is empty is sent as "(empty)" (an empty system message is dropped),
// because the API requires content there. A temperature of exactly 0 is sent
// as the smallest positive float32, since go-openai omits zero. MaxTokens is
// sent as max_tokens, or as max_completion_tokens for the reasoning models
// that go-openai knows refuse max_tokens.
//
// Attachments (images and sounds tools returned, core.Attachment) are sent
// only to a model declared to accept them (Options.Accepts): an image as an
// image_url part holding a data URL (PNG, JPEG, GIF, WebP), a sound as an
// input_audio part (WAV, MP3). A user message gets them after its text;
// tool messages take text only, so the attachments of a run of tool
// messages follow it in one user message, each introduced by the call it
// came from. Any other model, and any other type, reads only the text
// placeholder the tool's output holds: its request is exactly as without
// attachments. go-openai has no input_audio part, so a stand-in part is
// rewritten into one in the request body.
package openai
