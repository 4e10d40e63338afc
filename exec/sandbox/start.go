package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PrestartArg follows HelperArg for a helper started before its call is
// known (Prestart): "toolsrv __sandbox -". It reads its Order on OrderFD.
const PrestartArg = "-"

// PrepareArg follows HelperArg for a helper prepared for a tool and policy
// ahead of a call (Prepare): "toolsrv __sandbox +". It reads its Order
// (without the environment) on OrderFD, prepares everything short of
// starting the tool, reports Status.Ready, and then reads the call's Go.
const PrepareArg = "+"

// OrderFD is a prestarted helper's file descriptor for its Order.
const OrderFD = 4

// maxOrder bounds an Order's size (its argv and environment are the
// tool's; the kernel's own bound on them is lower).
const maxOrder = 16 << 20

// HelperSibling is the name of an optional slim sandbox helper installed
// beside the toolsrv binary (a main that only calls HelperMain).
const HelperSibling = "toolsrv-sandbox"

// DefaultHelper returns the helper binary to use for the toolsrv binary
// self: a slim HelperSibling next to it when one is installed (it starts
// several times faster), else self.
func DefaultHelper(self string) string {
	sib := filepath.Join(filepath.Dir(self), HelperSibling)
	if fi, err := os.Stat(sib); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return sib
	}
	return self
}

// Namespaces is what a helper is started in besides its own process
// group. The zero value: no namespaces.
type Namespaces struct {
	// PID: a PID namespace (the helper is its init) and a mount namespace
	// in which the helper mounts that PID namespace's own /proc (Policy
	// PidNS), so that the processes a tool sees there and its own PIDs
	// agree.
	PID bool
	// Mount: a mount namespace without a PID namespace (a tool that sees
	// the host's processes): the helper mounts the call's temporary
	// directory and Policy.Protect there (Policy MountNS).
	Mount bool
	// IPC: an IPC namespace.
	IPC bool
	// User: a user namespace of its own, mapping UID and GID to
	// themselves (a toolsrv that is not root).
	User     bool
	UID, GID int
}

// DefaultNamespaces are the namespaces of a call where the kernel allows
// them: PID (with its mount namespace) and IPC, and a user namespace
// unless toolsrv runs as root.
func DefaultNamespaces() Namespaces {
	return Namespaces{PID: true, IPC: true, User: os.Geteuid() != 0, UID: os.Getuid(), GID: os.Getgid()}
}

// sysProcAttr is how a helper is started: its own process group, killed
// with KillSignal when the thread that started it ends, its PID file
// descriptor in *pidfd, in n.
func (n Namespaces) sysProcAttr(pidfd *int) *syscall.SysProcAttr {
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: KillSignal, PidFD: pidfd}
	if n.PID {
		sys.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	}
	if n.Mount {
		sys.Cloneflags |= syscall.CLONE_NEWNS
	}
	if n.IPC {
		sys.Cloneflags |= syscall.CLONE_NEWIPC
	}
	if n.User {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		// The tool keeps its identity: the same uid and gid inside and out.
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: n.UID, HostID: n.UID, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: n.GID, HostID: n.GID, Size: 1}}
		sys.GidMappingsEnableSetgroups = false
		if n.PID || n.Mount {
			// A process whose uid is not 0 loses at its execve the
			// capabilities a new user namespace gives it, unless they are
			// ambient: the helper needs CAP_SYS_ADMIN there to mount its
			// PID namespace's /proc (mountProc) and the call's directories
			// (callMounts), then drops it on every thread
			// (dropCapabilities).
			sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
		}
	}
	return sys
}

// Order is what a prestarted helper is told once its call is known: what
// StartHelper would have put in its argv, environment and working
// directory. A prepared helper's Order has no environment: its Go brings
// it.
type Order struct {
	Policy json.RawMessage `json:"policy"`
	Argv   []string        `json:"argv"`
	Env    []string        `json:"env"`
	Dir    string          `json:"dir"`
}

// Go starts the tool of a prepared helper, with the call's environment.
type Go struct {
	Env []string `json:"env"`
}

// Helper is a started sandbox helper as its parent holds it: its PID and
// the parent's ends of its standard streams and status pipe. The parent
// reaps it.
type Helper struct {
	Exe string
	NS  Namespaces
	Pid int
	// PidFD is its PID file descriptor (-1 when the kernel has none);
	// the parent closes it.
	PidFD int
	// StartAt is when it was started, or for a prestarted helper, when
	// it got its Order.
	StartAt time.Time
	Stdin   *os.File // write end
	Stdout  *os.File // read end
	Stderr  *os.File // read end
	Status  *os.File // read end of the status pipe (StatusFD)

	order *os.File // write end of a prestarted helper's order pipe
	taken atomic.Bool
	// prepared: the helper was started by Prepare (its Go comes later).
	prepared bool
}

// StartHelper starts the helper exe with args (HelperArg POLICY -- ARGV)
// in dir with env, in ns. Its descriptors are exactly 0-2 (pipes to the
// parent) and StatusFD.
func StartHelper(exe string, args, env []string, dir string, ns Namespaces) (*Helper, error) {
	return startHelper(exe, args, env, dir, ns, false)
}

// Prestart starts the helper exe before its call is known, so that its
// process and Go runtime start while the caller still prepares the call
// (toolsrv call starts it while its own packages initialise). It waits,
// with its signals taken, for the Order that Use gives it, then goes on
// as a helper StartHelper started: it enters the Order's directory, and
// the Order's environment is the tool's. Its own environment is empty and
// it inherits the caller's working directory until then. A helper that
// gets no Order (Discard, or its parent ended) exits without running
// anything.
func Prestart(exe string, ns Namespaces) (*Helper, error) {
	return startHelper(exe, []string{HelperArg, PrestartArg}, []string{}, "", ns, true)
}

// Prepare starts the helper exe for a call of o (its policy, argv and
// working directory; o.Env is not used) before the call comes: the helper
// makes the call's namespaces, mounts, limits and confinement, with nothing
// of the call's yet, reports Status.Ready on the status pipe (Ready waits
// for it), and waits for its Go, which gives the environment and starts
// the tool at once. A helper that gets no Go (Discard, or its parent
// ended) exits without running anything. Each prepared helper serves one
// call.
func Prepare(exe string, ns Namespaces, o Order) (*Helper, error) {
	h, err := startHelper(exe, []string{HelperArg, PrepareArg}, []string{}, "", ns, true)
	if err != nil {
		return nil, err
	}
	h.prepared = true
	o.Env = nil
	b, err := json.Marshal(o)
	if err == nil && len(b) > maxOrder {
		err = fmt.Errorf("the call's order is %d bytes, over %d", len(b), maxOrder)
	}
	if err == nil {
		_, err = h.order.Write(b)
	}
	if err != nil {
		h.Discard()
		return nil, err
	}
	return h, nil
}

// Ready waits until a prepared helper has prepared its call, or reports
// why it could not (the helper then exits, having run nothing).
func (h *Helper) Ready() error {
	st, ok, err := ReadStatus(h.Status)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("the prepared sandbox helper ended without preparing")
	case st.Error != "":
		return errors.New(st.Error)
	case !st.Ready:
		return fmt.Errorf("the prepared sandbox helper reported %+v instead of being ready", st)
	}
	return nil
}

// Go starts a prepared helper's tool with env, once: ErrTaken when it was
// started or discarded before. On any other error the helper is ended
// (killed and reaped: it ran nothing) and the caller starts another.
func (h *Helper) Go(env []string) error {
	if h == nil || !h.prepared || h.order == nil || !h.taken.CompareAndSwap(false, true) {
		return ErrTaken
	}
	b, err := json.Marshal(Go{Env: env})
	if err == nil && len(b) > maxOrder {
		err = fmt.Errorf("the call's environment is %d bytes, over %d", len(b), maxOrder)
	}
	if err == nil {
		h.StartAt = time.Now()
		_, err = h.order.Write(b)
	}
	if cerr := h.order.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		h.discard()
	}
	return err
}

func startHelper(exe string, args, env []string, dir string, ns Namespaces, prestart bool) (_ *Helper, err error) {
	var opened []*os.File
	defer func() {
		if err != nil {
			for _, f := range opened {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			opened = append(opened, r, w)
		}
		return r, w, err
	}
	n := 4
	if prestart {
		n = 5
	}
	var ends [5][2]*os.File // stdin, stdout, stderr, status, order: [read, write]
	for i := range n {
		if ends[i][0], ends[i][1], err = pipe(); err != nil {
			return nil, err
		}
	}
	// The child's ends: 0-2 the standard streams, StatusFD the status
	// pipe, OrderFD the order pipe.
	files := []uintptr{ends[0][0].Fd(), ends[1][1].Fd(), ends[2][1].Fd(), ends[3][1].Fd()}
	if prestart {
		files = append(files, ends[4][0].Fd())
	}
	pidfd := -1
	// syscall.ForkExec rather than os/exec: the helper's descriptors are
	// set here exactly, and os/exec's one-time probe of the kernel's pidfd
	// support (a child process of its own) would cost every "toolsrv
	// call" half a millisecond.
	attr := &syscall.ProcAttr{Dir: dir, Env: env, Sys: ns.sysProcAttr(&pidfd), Files: files}
	startAt := time.Now()
	pid, err := syscall.ForkExec(exe, append([]string{exe}, args...), attr)
	// The child has its copies; close ours so that EOF arrives when it
	// exits.
	ends[0][0].Close()
	ends[1][1].Close()
	ends[2][1].Close()
	ends[3][1].Close()
	if prestart {
		ends[4][0].Close()
	}
	if err != nil {
		return nil, err
	}
	return &Helper{Exe: exe, NS: ns, Pid: pid, PidFD: pidfd, StartAt: startAt,
		Stdin: ends[0][1], Stdout: ends[1][0], Stderr: ends[2][0], Status: ends[3][0], order: ends[4][1]}, nil
}

// ErrTaken is Use's error for a helper that a call took, or that was
// discarded, before.
var ErrTaken = errors.New("the prestarted helper was taken or discarded")

// Use gives a prestarted helper the Order of a call, once: ErrTaken when
// it was used or discarded before. On any other error the helper is ended
// (killed and reaped: it would have run nothing) and the caller starts
// another.
func (h *Helper) Use(o Order) error {
	if h == nil || h.prepared || h.order == nil || !h.taken.CompareAndSwap(false, true) {
		return ErrTaken
	}
	err := h.send(o)
	if err != nil {
		h.discard()
	}
	return err
}

func (h *Helper) send(o Order) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if len(b) > maxOrder {
		return fmt.Errorf("the call's order is %d bytes, over %d", len(b), maxOrder)
	}
	h.StartAt = time.Now()
	_, err = h.order.Write(b)
	if cerr := h.order.Close(); err == nil {
		err = cerr
	}
	return err
}

// Alive says whether the helper's process is still there (its pidfd
// can be signalled).
func (h *Helper) Alive() bool {
	return h.PidFD >= 0 && unix.PidfdSendSignal(h.PidFD, 0, nil, 0) == nil
}

// Discard ends a prestarted or prepared helper that no call used: it is
// killed, reaped and its descriptors closed, and Use and Go refuse it from
// then on. It does nothing to a helper a call used (the runner reaps that
// one).
func (h *Helper) Discard() {
	if h != nil && h.order != nil && h.taken.CompareAndSwap(false, true) {
		h.discard()
	}
}

func (h *Helper) discard() {
	h.order.Close()
	syscall.Kill(h.Pid, syscall.SIGKILL)
	for {
		if _, err := syscall.Wait4(h.Pid, nil, 0, nil); !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	for _, f := range []*os.File{h.Stdin, h.Stdout, h.Stderr, h.Status} {
		f.Close()
	}
	if h.PidFD >= 0 {
		syscall.Close(h.PidFD)
		h.PidFD = -1
	}
}

// orders reads a prestarted or prepared helper's messages from its order
// pipe: the Order, then for a prepared helper its Go; at most maxOrder
// bytes in all.
type orders struct {
	f   *os.File
	dec *json.Decoder
}

func newOrders(f *os.File) *orders {
	return &orders{f: f, dec: json.NewDecoder(io.LimitReader(f, maxOrder+1))}
}

// next decodes the next message into v: ok is false when the pipe was
// closed without one (the call never came).
func (o *orders) next(v any, what string) (ok bool, err error) {
	switch err := o.dec.Decode(v); {
	case errors.Is(err, io.EOF):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("bad %s: %w", what, err)
	}
	return true, nil
}

func (o *orders) close() { o.f.Close() }
