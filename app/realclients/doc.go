// Package realclients runs the real coding clients and SDKs against a built
// `subpool serve` in front of internal/sim, and checks what a person sees.
//
// The clients are the pinned npm packages of internal/realclients (Claude
// Code, Codex CLI, Gemini CLI, opencode, @anthropic-ai/sdk, openai),
// installed once into a cache. Each scenario starts its own simulated upstream (in the test
// process, on loopback), its own `subpool serve --home DIR` with a
// config.toml pointing every provider at that upstream, adds credentials and
// a client key through subpool's own verbs and admin API, and runs one
// client as a person would: isolated HOME, config dirs and caches, no
// network but loopback, one turn, a timeout. It asserts the answer or the
// error text the client printed, the upstream calls the sim recorded and the
// wall time of the scenario.
//
// A client that cannot be installed fails the suite with the installer's
// one line; nothing is skipped. docs/clients.md, "Tested with the real
// clients", lists the scenarios and their figures.
//
// The package holds only tests; this file is its documentation.
package realclients
