package main

import "github.com/toolsrv/toolsrv/exec"

// sandboxHelperArg is the hidden first argument that turns this binary into
// the sandbox helper (see package exec: the server re-executes itself as
// "toolsrv __sandbox POLICY -- COMMAND", the helper applies Landlock to
// itself and then executes the tool).
const sandboxHelperArg = exec.HelperArg

// runSandboxHelper applies the sandbox and executes the tool; it returns
// only on failure (exit status exec.ExitSandbox).
func runSandboxHelper(args []string) int { return exec.HelperMain(args) }
