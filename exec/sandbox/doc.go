// Package sandbox is the helper side of toolsrv's sandbox: the code that
// runs in the re-executed helper process, restricts that process with
// Landlock (and, for tools without network, a seccomp filter against MPTCP
// sockets) and then executes the tool in place.
//
// It is separate from package exec so that it imports nothing but
// go-landlock and x/sys: a binary whose main only calls HelperMain starts
// several times faster than the whole toolsrv binary (whose package
// initialisation, mostly the JSON Schema library's, dominates a sandboxed
// call's overhead; see bench/RESULTS.md, "Running tools"), and can be used as
// exec.Options.SelfExe.
//
// The policy (what is readable, writable, executable) is documented in
// package exec.
package sandbox
