// Package anthropic is the model provider for the Anthropic Messages API
// (POST {BaseURL}/v1/messages), through the official SDK
// (github.com/anthropics/anthropic-sdk-go).
//
// Contract:
//
//   - Complete sends the system messages as the system prompt, the tools
//     with their JSON Schemas as input_schema, and the conversation as
//     alternating user and assistant turns: an assistant message's text
//     and calls become text and tool_use blocks, tool messages become
//     tool_result blocks (is_error for a failed call) in the user turn that
//     follows, and consecutive messages of one role are merged into one
//     turn, as the API requires. Empty text is sent as "(empty)": the API
//     refuses empty text blocks.
//   - The reply: the text blocks' text, the tool_use blocks as calls (their
//     input as compact JSON), the stop reason as the finish reason
//     ("end_turn", "tool_use", "max_tokens", "refusal", ...), and the usage:
//     the prompt tokens count cached reads and cache writes too, cached
//     tokens are the reads, reasoning tokens the thinking tokens.
//   - A reply with thinking or redacted_thinking blocks (Options.
//     ThinkingBudget) keeps all its blocks, in order, as the message's
//     opaque data (core.Opaque, provider "anthropic"), sent back in place
//     of the message on later requests: the API wants the signed thinking
//     back with the tool_use it led to.
//   - It streams unless Options.NoStream: text, tool input and thinking go
//     to the request's OnDelta as they arrive, and the stream is assembled
//     (the SDK's Message.Accumulate) into the message the same request
//     gives unstreamed. A stream that ends before message_stop broke off,
//     and is retried. Unstreamed, the SDK refuses a max_tokens so large
//     the request might take over ten minutes (a permanent error).
//   - Retries are shell/models/internal/httpcall's, as for every provider
//     (429 with Retry-After, 529 overloaded and other 5xx, transport
//     errors, idle attempts, broken streams, malformed replies); an error
//     event in the stream is retried when it is overloaded_error,
//     rate_limit_error or api_error, and fails the call otherwise. 401,
//     403, 404 and other 4xx are permanent and say what to check.
//   - The API key is read once, by New, from the variable Options.APIKeyEnv
//     names, and sent as x-api-key. Nothing else is read from the
//     environment: the SDK's ANTHROPIC_* variables and profiles are
//     ignored.
package anthropic
