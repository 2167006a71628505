package gtpnl

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ErrResync is matched (errors.Is) by a receive error that means events
// were lost: the socket's buffer overflowed (ENOBUFS). The caller must dump
// QERs, PDRs and FARs again instead of trusting its incremental state.
var ErrResync = errors.New("gtp5g events lost (ENOBUFS): resync needed")

// ErrNotSupported is matched (errors.Is) by errors from features that only
// the gtp5g-patch series provides, when the loaded module lacks them. Such
// errors also match os.ErrNotExist and errors.ErrUnsupported.
var ErrNotSupported error = notSupported{}

type notSupported struct{}

func (notSupported) Error() string {
	return "not supported by this gtp5g module (needs the gtpqos gtp5g-patch series)"
}

func (notSupported) Is(target error) bool {
	return target == os.ErrNotExist || target == errors.ErrUnsupported
}

// errNotLoaded is returned by Dial when the generic netlink family gtp5g
// does not exist. Its text is exactly what the CLI prints.
type errNotLoaded struct{ err error }

func (e errNotLoaded) Error() string        { return "gtp5g module not loaded" }
func (e errNotLoaded) Unwrap() error        { return e.err }
func (e errNotLoaded) Is(target error) bool { return target == os.ErrNotExist }

// OpError is an error from one gtp5g operation. It names the operation and
// maps the kernel's errno: ENOENT and ENODEV match os.ErrNotExist, EPERM
// and EACCES match os.ErrPermission, ENOBUFS matches ErrResync.
type OpError struct {
	// Op names the operation, e.g. "dump QERs".
	Op string
	// Err is the underlying error (usually a *netlink.OpError).
	Err error
}

// Error returns "gtp5g <op>: <err>". A refusal (EPERM) names the
// capability every gtp5g and gtp5g_qos command needs: a daemon started
// without it stops at its first request, and the line must say why.
func (e *OpError) Error() string {
	s := "gtp5g " + e.Op + ": " + e.Err.Error()
	if errors.Is(e.Err, unix.EPERM) {
		s += " (gtp5g's commands need CAP_NET_ADMIN)"
	}
	return s
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// Is maps errno values to the os and gtpnl sentinels.
func (e *OpError) Is(target error) bool {
	switch target {
	case os.ErrNotExist:
		return errors.Is(e.Err, unix.ENOENT) || errors.Is(e.Err, unix.ENODEV)
	case os.ErrPermission:
		return errors.Is(e.Err, unix.EPERM) || errors.Is(e.Err, unix.EACCES)
	case ErrResync:
		return errors.Is(e.Err, unix.ENOBUFS)
	}
	return false
}

// opError wraps err (if non-nil) in an *OpError naming op.
func opError(op string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Err: err}
}
