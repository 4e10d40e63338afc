package main

// sandboxHelperArg is the hidden first argument that turns this binary into
// the sandbox helper.
const sandboxHelperArg = "__sandbox"

// runSandboxHelper is a placeholder until package exec lands the helper.
func runSandboxHelper(args []string) int { return 126 }
