// Package provider defines the row every model provider adds to the
// provider table (shell/models.Providers): its name, the keys of an agent
// file's [models.ROLE] table it takes, how it checks them, how it builds a
// shell.ModelProvider from them, its defaults, what it supports and the
// name telemetry reports for it.
//
// Contract:
//
//   - Settings are the keys of a [models.ROLE] table that providers read;
//     shell/agent's Model embeds them, so a key a new provider needs is a
//     field here and nowhere in shell/agent.
//   - An Entry says which of the keys only some providers take it takes
//     (Entry.Takes); shell/agent refuses such a key on every other
//     provider, naming the providers that take it.
//   - Entry.Check checks the values of the entry's own keys; its errors
//     are *KeyError, naming the key they are about. Entry.New builds the
//     provider; it reads the API key's variable, nothing else of the
//     environment (and not that with Build.Render: a provider built to
//     render requests, shell.RequestRenderer, reads no key or file).
//   - A Table is a plain list: no registry to mutate, no init order. The
//     table shell/agent and telemetry read is shell/models.Providers.
//
// The package does no I/O itself; Check and New of an entry may (the
// script provider reads its file).
package provider
