package main

import (
	"context"
	"encoding/json"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/mcp"
)

// mcpFailure is the MCP server of a "toolsrv mcp" that could not start as
// asked (a thresholds file it cannot read, an MCP config it cannot parse,
// an agent without a profile): it answers initialize, with the reason in
// its instructions, lists find_tools and call_tool, and answers both with
// an error result that says why. An MCP client shows nothing of a server
// that exits before initialize but "connection closed", and the person
// looking at it never sees the line on standard error.
func mcpFailure(reason string) *sdk.Server {
	why := "toolsrv could not start: " + reason + "; fix that and restart this server (its standard error says the same)"
	srv := sdk.NewServer(&sdk.Implementation{Name: "toolsrv", Title: "toolsrv: tool search, ranking and sandboxed calls", Version: moduleVersion()},
		&sdk.ServerOptions{Instructions: why})
	answer := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: why}}}, nil
	}
	object := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&sdk.Tool{Name: mcp.FindTools, Description: why, InputSchema: object}, answer)
	srv.AddTool(&sdk.Tool{Name: mcp.CallTool, Description: why, InputSchema: object}, answer)
	return srv
}

// serveMCPFailure serves mcpFailure(reason) on standard input and output
// until the client closes it; the exit status is 1.
func serveMCPFailure(ctx context.Context, env *cliEnv, reason string, log *slog.Logger) int {
	st := mcp.NewServerStdio(env.stdin, env.stdout, log, mcpDrain)
	ran := make(chan error, 1)
	go func() { ran <- mcpFailure(reason).Run(ctx, st.Transport()) }()
	select {
	case <-ran:
	case <-st.Closed():
	}
	return 1
}
