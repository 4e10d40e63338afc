package ninep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/hugelgupf/p9/linux"
)

// Refusal is a refused request: the errno the 9P client receives and the
// human-readable reason that is left in the err file. Callers and Rankers
// may return a *Refusal (possibly wrapped) to choose the errno themselves.
type Refusal struct {
	Errno  linux.Errno
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// Refuse makes a *Refusal with a formatted reason.
func Refuse(errno linux.Errno, format string, args ...any) error {
	return &Refusal{Errno: errno, Reason: fmt.Sprintf(format, args...)}
}

// ErrnoOf maps an error to the errno a 9P client receives: a *Refusal's own
// errno, then the usual fs and context errors; anything else is EIO.
func ErrnoOf(err error) linux.Errno {
	var r *Refusal
	switch {
	case err == nil:
		return 0
	case errors.As(err, &r):
		return r.Errno
	case errors.Is(err, context.DeadlineExceeded):
		return linux.ETIMEDOUT
	case errors.Is(err, context.Canceled):
		return linux.EINTR
	case errors.Is(err, fs.ErrNotExist):
		return linux.ENOENT
	case errors.Is(err, fs.ErrPermission):
		return linux.EACCES
	case errors.Is(err, fs.ErrExist):
		return linux.EEXIST
	case errors.Is(err, fs.ErrInvalid):
		return linux.EINVAL
	}
	var e linux.Errno
	if errors.As(err, &e) {
		return e
	}
	return linux.EIO
}
