package sandbox

import "golang.org/x/sys/unix"

// arm64 has only the *at variants of chmod, creat, mknod and open.
var nativeSyscalls = syscalls{arch: unix.AUDIT_ARCH_AARCH64, chmod: -1, creat: -1, mknod: -1, open: -1}
