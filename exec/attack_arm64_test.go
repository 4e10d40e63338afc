package exec

import "golang.org/x/sys/unix"

func stackPointer(r *unix.PtraceRegs) uint64 { return r.Sp }
