// Package statedir says where toolsrv keeps its private state: the usage
// history, the MCP servers' pins, the token files. Tools never get it as
// a working directory (exec.WorkDirGuard's Private paths).
package statedir
