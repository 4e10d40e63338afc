package mcp

import sdk "github.com/modelcontextprotocol/go-sdk/mcp"

// capabilities are what the server declares (initialize, server/discover).
// It has tools, whose list changes; no prompts or resources, but the SDK
// answers their lists (empty), so they are declared too: what a client
// discovers is what is served.
func capabilities() *sdk.ServerCapabilities {
	return &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true},
		Prompts: &sdk.PromptCapabilities{}, Resources: &sdk.ResourceCapabilities{}}
}
