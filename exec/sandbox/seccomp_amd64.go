package sandbox

import "golang.org/x/sys/unix"

var nativeSyscalls = syscalls{arch: unix.AUDIT_ARCH_X86_64, x32: true,
	chmod: unix.SYS_CHMOD, creat: unix.SYS_CREAT, mknod: unix.SYS_MKNOD, open: unix.SYS_OPEN}
