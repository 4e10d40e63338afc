package mcp

// TokenEnv is the environment variable that may hold the bearer token of
// "toolsrv mcp --listen". (The token's checks and its file are
// internal/token's, shared with the 9P server's token.)
const TokenEnv = "TOOLSRV_MCP_TOKEN"
