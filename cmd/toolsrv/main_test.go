package main

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

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
