// Package engine is toolsrv wired together: the registry (tool definitions,
// watched), the index (ranking, with the learned last step), the thresholds
// (what is offered) and the runner (sandboxed calls). Every front end builds
// one Engine and asks it: the CLI's serve, rank, eval, tune and bench, the
// MCP server, and a prompt assembler through the Go API:
//
//	eng, err := engine.New(ctx, engine.Options{}) // $OLLIE_TOOLS_PATH, built-in embedder, shipped thresholds
//	if err != nil { ... }
//	defer eng.Close()
//	go eng.Run(ctx) // follows edits of the tool directories
//	ans, err := eng.Rank(ctx, engine.Request{Query: msg, Context: lastFew, Profile: profile})
//	// ans.Tools: what goes in the prompt, best first; ans.NoToolFits and ans.Reason; ans.Degraded
//
// One vocabulary serves every front end: a Request (DecodeRequest and
// ParseRequest read the forms 9P and MCP take) is answered by an Answer
// (with its Explanation when asked), a CallRequest by a call whose outcome
// is a CallResult on the wire. The CLI, the 9P server and the MCP server
// decode, ask the engine and encode: defaults (Options.DefaultLimit), cuts
// and explanations are the engine's. A Caller, set by the transport, says
// who asks; the engine alone remembers, per session, the answers it gave
// and which answer offered which tool, and alone decides what a call or a
// load records in the usage history (capture.go).
//
// New loads the catalog, opens the embedder by name (package embed), builds
// or reopens the index (its cache makes a restart with nothing changed cost
// no embedding), loads the thresholds and, when asked, makes the runner.
// Options.NoIndex skips the index for front ends that only list or call.
//
// Providers (Options.Providers) add tools defined elsewhere, named
// PROVIDER:TOOL: an MCP server's, a remote toolsrv's (package remote). An
// Overlay is one session's own catalog: the engine's tools plus .meta
// definitions sent to that session, resolved on this host, with an index
// of its own made from the engine's index cache (the 9P server's
// session/S/meta/).
//
// Where to change what: a new front end builds an Engine; a new embedder
// is a package that calls embed.Register, imported in embedders.go; what a
// ranking offers is thresholds.Policy; how tools run is package exec.
package engine
