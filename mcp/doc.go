// Package mcp is toolsrv and the Model Context Protocol, both ways, on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// # toolsrv as an MCP server (server.go)
//
// Server serves an engine to MCP clients (Claude Code, Claude Desktop,
// Cursor, VS Code, the MCP Inspector) with three kinds of tools:
//   - find_tools {query, context?, limit?, explain?}: the engine's offered
//     set for the request, thresholds applied (the agent profile's hot
//     tools among it), each tool with its name, description, input schema
//     and score; or noToolFits with the reason; degraded says the ranking
//     fell back to lexical scores. With explain, the engine's explanation
//     too (engine.Explanation: per ranked tool its signals, the request's
//     words it matched by field, the rule that offered it or left it
//     out). The answer is JSON text and the same object as structured
//     content (Found).
//   - call_tool {name, arguments}: runs the tool as "toolsrv call" does
//     (schema check, sandbox, limits, bypass broker; a provided tool by its
//     provider). Its {"content": [...]} output becomes MCP content items,
//     other output one text item; a failing tool, unknown tool or refused
//     call is an isError result saying why, never a protocol error.
//   - the hot tools of the agent profile (ServerOptions.Profile), listed
//     directly so that a client sees them without a search. A tool whose
//     name MCP does not allow (a provided PROVIDER:TOOL has a ':') or
//     whose schema is not an object schema is reachable through call_tool
//     only. Follow keeps them current: when the catalog changes, changed
//     hot tools are replaced and the SDK sends
//     notifications/tools/list_changed.
//
// With ServerOptions.Native (native.go), the tools find_tools finds are
// listed too, under their own names (NativeName: SERVER__TOOL for an
// imported SERVER:TOOL, whose ':' MCP names cannot hold) with their
// descriptions and input schemas, so that the model calls them directly
// (a call runs as call_tool's does, and cites the find_tools answer that
// offered the tool); find_tools' "native" maps each offered tool to the
// name it is listed under. A name that is find_tools', call_tool's or
// another catalog tool's is refused (the tool stays reachable through
// call_tool). Past NativeCap (DefaultNativeCap, 32) the least recently
// found or called tools leave the list. The list is the server's, shared
// by its sessions (one on standard input and output).
//
// # Over HTTP (http.go, bearer.go, sessions.go, tokenfile.go)
//
// Server.HTTPHandler serves the server over streamable HTTP ("toolsrv mcp
// --listen"). Every request must carry one of its bearer tokens
// (Authorization: Bearer; 401 otherwise, logged without the body), checked
// in constant time; each Token names its holder, which handlers read with
// Principal (the SDK's TokenInfo.UserID, which also keeps a session to the
// holder that opened it). Each request is served by the protocol revision
// it names: 2026-07-28 and later (the MCP-Protocol-Version header, or the
// version in its _meta) by the SDK's stateless transport, the older ones
// with sessions, bounded: closed after SessionTimeout with no request open
// on them, at most MaxSessions (a new one closes the one idle longest, or
// is refused with 503 when all are in use). Session event streams start
// with the SSE retry field and the SDK's priming event, and are resumed
// from a bounded memory of events. A browser's cross-site request and a
// loopback request naming another host (DNS rebinding) are refused. The
// token of "toolsrv mcp --listen" is read from a file of the user's
// (ReadTokenFile), or made in toolsrv's private state directory
// (MakeTokenFile), or given in TokenEnv.
//
// ServerStdio is the transport of "toolsrv mcp" on standard input and
// output (stdio.go): the SDK's, except that a line that is not a JSON-RPC
// message is answered with the JSON-RPC error (parse error, invalid
// request) instead of ending the session, that the requests read before
// standard input ends are answered before the session ends (within a
// bound), and that it tells when standard input ends (the client's way
// to shut a stdio server down).
//
// # MCP servers as a tool source (config.go, provider.go, connect.go)
//
// A configuration file in the clients' format ({"mcpServers": {NAME:
// {"command", "args", "env"} | {"url", "headers"}}}, LoadConfig) names
// servers; each is one engine.Provider (Providers). Its tools join the
// catalog as NAME:TOOL (registry.ProviderSep: ':' cannot occur in a .meta
// name, so the scheme cannot collide with a .meta tool, not even one
// called NAME.TOOL), with their description (their title as a keyword)
// and input schema, and are indexed, ranked, offered and called with the
// .meta tools.
//
// Keys of an entry besides the clients' own: "type" (or "transport"):
// stdio (default with "command"), http (streamable HTTP, default with
// "url") or sse; "cwd": a stdio server's working directory (readable; by
// default its private temporary directory); "timeout": one call's limit
// ("60s" or seconds); "startTimeout": how long initialize and the first
// tools/list may take (30 s); "maxTools": how many of its tools are taken
// (DefaultMaxTools); "trustNewTools": true takes the tools it adds later
// without approval (see Pins); "disabled": true skips it; "sandbox":
// {"network": bool, "read": [paths], "write": [paths]} or false; "oauth":
// an http server's OAuth (OAuthConfig; on by default, false turns it off).
// Unknown keys are warnings.
//
// A server is someone else's program, and bounded (provider.go): at most
// maxTools of its tools are taken, and its pages of tools/list are not
// read past them (a stdio server's page past the cap is cut before the
// SDK decodes it: pageBound); at most MaxListingBytes of definitions; a
// tool whose name is not a tool name, whose description exceeds
// MaxDescriptionBytes or whose schema exceeds the registry's bounds is
// left out, its name shown quoted and short (registry.ShownName). What is
// dropped past a bound is one warning naming the server (Notes).
//
// With ProviderOptions.Pins (pins.go), each server's tools are pinned on
// first sight, and a tool whose definition later changes, or a new one,
// is held until its owner approves it (Pins.Approve): published as hidden
// with a reason that never repeats the changed text (Held.Reason), so it
// is neither ranked, listed nor callable; Provider.Held gives what
// changed (Held.Diff).
//
// A stdio server runs under the sandbox of tool calls (exec.Runner.Start):
// Landlock read-only on the system directories, plus the node_modules
// directory (or, for a script, the directory) of every file its command
// line names, plus "read"; writable only its private temporary directory
// (its HOME and TMPDIR) and "write"; no TCP or UDP unless "network"; the
// limits of a call; an environment of a tool's plus its "env". "sandbox":
// false runs it outside Landlock and seccomp only when the bypass broker
// approves, at each start. Remote (http, sse) servers do not run here and
// are not sandboxed.
//
// Lifetime: a provider starts its server when the engine starts (a
// catalog needs its tools), keeps it, and when it dies or cannot start,
// lists its tools as hidden with the reason and starts it again after a
// backoff (1 s doubling to 1 min; reset after a minute of health). Its
// tools are listed again on notifications/tools/list_changed. A server
// that gives no tools says what it was doing: no reply to initialize (or
// tools/list) within startTimeout (it is stopped and retried), or how it
// ended before answering, with the end of its standard error; a package
// runner (npx, uvx, pipx run, bunx, pnpm dlx, ...) in a sandbox without
// network is a configuration warning, and its start failure says it
// likely needs "network": true (ServerConfig.NetworkHint). A failed call
// (isError, or a JSON-RPC error) is exec.ErrExit whose message puts the
// server's text after toolsrv's words, on lines of its own. One that writes non-JSON lines on standard output has them
// dropped and reported; a tool whose schema does not compile is left
// out and reported; every problem names the server (validate, ls, the 9P
// errors file), and the other servers and the .meta tools are served
// meanwhile. Vectors are cached by the tool's text as for .meta tools, so
// a restart with unchanged servers makes no embedder call.
//
// # Remote servers (connect.go, oauth.go, login.go, tokens.go)
//
// An http server's broken stream is resumed with Last-Event-ID after its
// retry delay, up to streamRetries+1 times in a row without a new event.
// Its transport follows no redirect to another origin. A server that asks
// for authorization gets OAuth 2.1 (oauth.go): a login a person made
// once with Login ("toolsrv mcp login"), saved in TokenDir (tokens.go)
// and refreshed, or the client credentials grant. The SSE transport has
// no OAuth.
//
// # Questions (elicit.go, relay.go)
//
// The client declares elicitation; a server's question during a call goes
// to the MCP client behind the call, as an input-required result of that
// call (relay.go), or is declined with a note in the call's result.
package mcp
