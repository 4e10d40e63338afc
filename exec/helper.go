package exec

import "github.com/toolsrv/toolsrv/exec/sandbox"

// HelperArg is the hidden first argument that turns the toolsrv binary into
// the sandbox helper: "toolsrv __sandbox POLICY -- ARGV...". The binary's
// main must call HelperMain(os.Args[2:]) before anything else when it sees
// it.
const HelperArg = sandbox.HelperArg

// ExitSandbox is the helper's exit status when the sandbox could not be
// applied or the tool could not be executed.
const ExitSandbox = sandbox.ExitSandbox

// HelperMain is the sandbox helper's main (see package exec/sandbox): it
// restricts its own process and executes the tool in place, returning only
// on failure.
func HelperMain(args []string) int { return sandbox.HelperMain(args) }

// LandlockABI reports the kernel's Landlock ABI version (0 and an error
// when Landlock is unavailable).
func LandlockABI() (int, error) { return sandbox.LandlockABI() }

// CloseInherited marks every descriptor from first up close-on-exec (see
// sandbox.CloseInherited).
func CloseInherited(first int) error { return sandbox.CloseInherited(first) }
