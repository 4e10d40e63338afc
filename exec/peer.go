package exec

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// ErrNotUnix: the connection is not a Unix socket, so the process at the
// other end cannot be known (TCP).
var ErrNotUnix = errors.New("not a Unix socket connection: the peer cannot be identified")

// Peer is the process at the other end of a Unix socket connection, as far
// as the server's trust is concerned.
type Peer struct {
	// PID and UID of the connecting process (as SO_PEERCRED saw them at
	// connect); PID is 0 when the process is not visible from here.
	PID, UID int
	// Tool: the process is a tool started by a toolsrv sandbox helper (of
	// this server or any other), or a descendant of one: it carries the
	// mark no process can remove (see sandbox.Marker).
	Tool bool
	// Call is the live call of this Runner the process belongs to, when
	// Tool and it is one: its session and agent are all the connection may
	// use.
	Call *CallContext
}

// Identify tells who is connecting on c, a Unix socket connection accepted
// by the server. The answer cannot be forged by the peer: the tool mark is
// a resource limit a process can never raise again, and the call is found
// through the process's PID namespace (or, without namespaces, its chain
// of parents up to the call's helper). A process that exits before it is
// identified is refused (it could have been replaced by another with the
// same PID).
func (r *Runner) Identify(c net.Conn) (Peer, error) {
	// Wrappers (a logging connection, say) give the connection they wrap.
	for {
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("%T: %w", c, ErrNotUnix)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	pidfd := -1
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd = v
		}
	}); err != nil {
		return Peer{}, err
	}
	if credErr != nil {
		return Peer{}, fmt.Errorf("reading the peer's credentials: %w", credErr)
	}
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid)}
	if p.PID == 0 {
		// Not in our PID namespace or a descendant: not a tool of ours, nor
		// of any toolsrv whose calls we could see.
		return p, nil
	}
	if pidfd < 0 {
		// Kernels before 6.5: take a pidfd now. The process might have
		// exited and its PID gone to another since connect; a process
		// started after the connection cannot be the peer.
		if pidfd, err = unix.PidfdOpen(p.PID, 0); err != nil {
			return p, fmt.Errorf("the connecting process %d is gone: %w", p.PID, err)
		}
		defer unix.Close(pidfd)
	} else {
		defer unix.Close(pidfd)
	}
	p.Tool, err = sandbox.Marked(p.PID)
	if err != nil {
		return p, err
	}
	if p.Tool {
		p.Call = r.callOf(p.PID)
	}
	if !pidfdAlive(pidfd) {
		return p, fmt.Errorf("the connecting process %d exited before it could be identified", p.PID)
	}
	return p, nil
}

// callOf finds the live call process pid belongs to: by its PID namespace
// when calls get one, else by walking its parents up to a call's helper
// (the helper is a subreaper, so orphans stay below it).
func (r *Runner) callOf(pid int) *CallContext {
	if ns, err := nsInode(pid, "pid"); err == nil {
		if c := r.calls.byNS(ns); c != nil {
			cc := c.cc
			return &cc
		}
	}
	for p, steps := pid, 0; p > 1 && steps < 4096; steps++ {
		if c := r.calls.get(p); c != nil {
			if c.pidNS != 0 || !pidfdAlive(c.pidfd) {
				return nil // a namespaced call is found by namespace only
			}
			cc := c.cc
			return &cc
		}
		next, err := parentOf(p)
		if err != nil {
			return nil
		}
		p = next
	}
	return nil
}
