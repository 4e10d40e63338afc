// Package token holds the secrets toolsrv's network listeners take from
// their clients: the bearer token of "toolsrv mcp --listen" (MCP over
// HTTP) and the token of "toolsrv serve --listen tcp:" (9P over TCP, sent
// as the attach name). A token is a line of visible ASCII of at least
// MinLength characters (Check); it lives in a file of the user's that no
// one else may read (ReadFile), or one toolsrv makes, 0600 in a private
// directory, and reuses (MakeFile); and a client's guess is compared with
// it in constant time (Sum.Matches).
package token
