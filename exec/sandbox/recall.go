package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// TempPrefix starts the name of every call's private temporary directory:
// toolsrv-call-PID-RANDOM, PID being the server's (or toolsrv call's).
const TempPrefix = "toolsrv-call-"

// Recipe is a call's helper as Prepare makes it, but for its temporary
// directory: what "toolsrv call" remembers of a tool's call, so that the
// next call of that tool has its helper prepared while toolsrv starts
// (Recall). It is only a guess: the call uses the helper prepared from
// it only if the call's own recipe is the same in every field and the
// helper still fits (Recalled.Take).
type Recipe struct {
	Tool   string     `json:"tool"`
	NS     Namespaces `json:"ns"`
	Argv   []string   `json:"argv"`
	Dir    string     `json:"dir"`
	Policy Policy     `json:"policy"` // TempDir empty
}

// consistent says whether rc's namespaces and the policy's account of
// them agree as a call's always do (package exec's isolation): none and
// none; or a PID namespace or else a mount namespace alone, the policy's
// mount namespace, and a user namespace mapping this process's own ids
// exactly when it is not root. A recipe is read from a file: the helper
// prepared from it acts on its policy's account (mounts, before anything
// is compared), which must not claim namespaces it does not have.
func (rc Recipe) consistent() bool {
	ns, p := rc.NS, rc.Policy
	if ns == (Namespaces{}) {
		return !p.PidNS && !p.MountNS && !p.UserNS
	}
	user := os.Geteuid() != 0
	return ns.IPC && p.PidNS == ns.PID && ns.Mount == !ns.PID && p.MountNS &&
		ns.User == user && p.UserNS == user && (!user || ns.UID == os.Getuid() && ns.GID == os.Getgid())
}

// Recalled is a helper prepared from a remembered Recipe before its call
// is known (Recall).
type Recalled struct {
	Exe    string
	Recipe Recipe
	// Tmp is its temporary directory, TempPrefix+PID-RANDOM in the root
	// Recall was given.
	Tmp   string
	h     *Helper
	stamp DirStamp
	files []FileID
}

// Recall prepares the helper exe for a call of rc (Prepare), with a new
// temporary directory in root (its symbolic links resolved, as a runner's
// TempRoot is), and notes what the call must find
// unchanged: the files the policy's paths name and the directory.
func Recall(exe, root string, rc Recipe) (*Recalled, error) {
	if rc.Policy.TempDir != "" || rc.Policy.Unconfined || len(rc.Argv) == 0 || !rc.consistent() {
		return nil, errors.New("not a recipe of a sandboxed call")
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	tmp, err := os.MkdirTemp(root, fmt.Sprintf("%s%d-", TempPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	r := &Recalled{Exe: exe, Recipe: rc, Tmp: tmp, stamp: StampOf(tmp), files: PolicyFiles(rc.Policy)}
	pol := rc.Policy
	pol.TempDir = tmp
	pj, err := json.Marshal(pol)
	if err == nil {
		r.h, err = Prepare(exe, rc.NS, Order{Policy: pj, Argv: rc.Argv, Dir: rc.Dir})
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return r, nil
}

// Take returns the prepared helper for a call whose own recipe is the
// same as r's (the caller compares them) and its temporary directory,
// once: after the helper reported ready, with every path of the policy
// still the file it was before the preparation, the directory as made
// and empty, and the helper alive. Otherwise r is discarded and the error
// says why; the call then starts a helper of its own.
func (r *Recalled) Take(ctx context.Context) (*Helper, string, error) {
	if r == nil || r.h == nil {
		return nil, "", errors.New("no recalled helper")
	}
	h := r.h
	r.h = nil
	// A helper still preparing (a working directory on a hung file
	// system) must not hold the call past its end: ctx ending kills it.
	ready := make(chan error, 1)
	go func() { ready <- h.Ready() }()
	var err error
	select {
	case err = <-ready:
	case <-ctx.Done():
		h.Discard()
		<-ready
		err = ctx.Err()
	}
	switch {
	case err != nil:
	case !slices.Equal(r.files, PolicyFiles(r.Recipe.Policy)):
		err = errors.New("a path of the policy changed since the helper was prepared")
	case !TempIntact(r.Tmp, r.stamp):
		err = errors.New("its temporary directory is not as made")
	case !h.Alive():
		err = errors.New("it ended")
	}
	if err != nil {
		h.Discard()
		os.RemoveAll(r.Tmp)
		return nil, "", err
	}
	return h, r.Tmp, nil
}

// Discard ends a recalled helper no call took and removes its temporary
// directory; after Take it does nothing.
func (r *Recalled) Discard() {
	if r == nil || r.h == nil {
		return
	}
	r.h.Discard()
	r.h = nil
	os.RemoveAll(r.Tmp)
}
