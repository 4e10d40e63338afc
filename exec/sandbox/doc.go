// Package sandbox is the helper side of toolsrv's sandbox: the code that
// runs in the re-executed helper process. The helper closes inherited
// descriptors, mounts its PID namespace's own /proc (proc.go), applies the
// call's limits and marker, confines itself
// (capabilities, a seccomp filter, Landlock on the thread that starts the
// tool), starts the tool as its child and stays as the call's init (or
// child subreaper) until the tool and everything it started are gone; then
// it reports a Status on its status pipe. The parent's side of starting it
// is here too (StartHelper; Prestart for a helper that waits for its call;
// Prepare for one that prepares everything for a known call but its
// environment, reports Status.Ready and starts the tool at its Go), so
// that a package with few imports can start one early.
//
// It is separate from package exec so that it imports nothing but
// go-landlock and x/sys: a binary whose main only calls HelperMain starts
// faster than the whole toolsrv binary, and can be used as
// exec.Options.SelfExe.
//
// The policy (what is readable, writable, executable, the limits) is
// documented in package exec.
package sandbox
