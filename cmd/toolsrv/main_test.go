package main

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// safetyNet bounds a test's wait for something to be ready (a server to
// answer, a process to exit, a change to show): the tests wait for the
// event itself, and this only ends a wait that would never end. It is
// generous because a loaded machine (make test beside another make test,
// load ~170 on 2 cores) is that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

// built is the toolsrv binary the tests run (buildToolsrv): built at most
// once per test binary, into dir, which TestMain makes and removes.
var built struct {
	dir  string
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolsrv-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "a directory for the toolsrv binary:", err)
		os.Exit(1)
	}
	built.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
