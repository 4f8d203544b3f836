// Package models holds the provider table (Providers): the model
// providers an agent file's [models.ROLE] provider key can name. shell/agent
// builds and checks a model role through its entry, and telemetry names a
// provider by it; neither switches on provider names.
//
// The providers:
//
//   - "openai" (shell/models/openai): OpenAI-compatible chat completions
//     (OpenAI, Azure, Ollama, vLLM, the llama.cpp server), through
//     go-openai. base_url defaults to https://api.openai.com/v1. Its own
//     key: accepts (["image"], ["audio"]: the attachments it sends).
//   - "openai-responses" (shell/models/responses): the OpenAI Responses
//     API, through openai-go. Requests are stateless (store = false); a
//     reply's reasoning items are kept with the run and sent back on the
//     next request. Its own keys: reasoning_effort ("minimal", "low",
//     "medium", "high") and reasoning_summary ("auto", "concise",
//     "detailed"; some organisations must be verified for it).
//   - "anthropic" (shell/models/anthropic): the Anthropic Messages API,
//     through anthropic-sdk-go. base_url defaults to
//     https://api.anthropic.com; max_tokens defaults to 8192 (the API
//     requires one). Its own key: thinking_budget (tokens, at least 1024
//     and below max_tokens) turns extended thinking on; the signed
//     thinking is kept with the run and sent back.
//   - "script" (shell/models/script): answers from a JSONL file (script =
//     PATH), for demos and tests.
//
// The HTTP providers share one skeleton (shell/models/internal): one retry
// loop, one way to read the key and check the common options, one
// assembly of a streamed reply's deltas, one explanation of a failure.
//
// # What the model saw
//
// Every provider is a shell.RequestRenderer: RenderRequest(req) returns
// the request Complete sends for req (method, URL, headers, body) without
// sending it, so what the model received at any recorded step can be
// shown (stepwise show RUN --step N --request, GET
// /v1/runs/{id}/steps/{seq}/request; shell/agent.RenderStep). The body
// cannot drift from what Complete sends, because it is not built a second
// time: the HTTP providers run one attempt of Complete itself (the same
// attempt function, the same SDK call, streamed or not as configured, and
// for openai the same audio rewrite), and httpcall's Do, which every SDK
// sends through, keeps the request instead of sending it (Base.Render).
// So the body is the SDK's own bytes, with the model, temperature,
// max_tokens, system prompt, attachments, reasoning or thinking options
// and the reasoning or thinking kept with earlier replies as they were
// sent. The headers are the SDK's too, the credentials redacted: the API
// key is shown as its variable's marker ("Bearer
// [redacted:OPENAI_API_KEY]"), and a credential header holding no key as
// "[redacted]"; headers that name the runtime (X-Stainless-OS, ...)
// describe the process that renders. Each provider's tests check the
// rendered request against the bytes an in-process server received from
// Complete. Built with provider.Build.Render, an HTTP provider reads no
// API key (its marker stands in for it) and refuses to complete, so
// showing a run needs no key. The script provider makes no HTTP request:
// it renders the JSON object {"provider":"script","call","reply",
// "messages","tools"}: what it was given and which reply answered.
//
// # Adding a provider
//
// Write its package under shell/models: a shell.ModelProvider (and
// shell.RequestRenderer: an HTTP provider passes the attempt function its
// Complete retries to httpcall's Base.Render) and a
// func Entry() provider.Entry saying its name, the keys it takes (a key no
// other provider reads is a field of provider.Settings), how it checks
// them and how it builds the provider. Then add the Entry to Providers
// and a paragraph above. The list is explicit, not filled by init
// functions as database/sql drivers are: the table is then a value
// (nothing to mutate, no init order, no blank imports to forget), its
// order is the order messages list the providers in, and a provider an
// agent file names is always compiled in.
package models
