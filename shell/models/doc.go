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
// # Adding a provider
//
// Write its package under shell/models: a shell.ModelProvider and a
// func Entry() provider.Entry saying its name, the keys it takes (a key no
// other provider reads is a field of provider.Settings), how it checks
// them and how it builds the provider. Then add the Entry to Providers
// and a paragraph above. The list is explicit, not filled by init
// functions as database/sql drivers are: the table is then a value
// (nothing to mutate, no init order, no blank imports to forget), its
// order is the order messages list the providers in, and a provider an
// agent file names is always compiled in.
package models
