//go:build !linux

package gtpnl

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// errUnsupportedOS is returned on every platform but Linux.
var errUnsupportedOS = fmt.Errorf("gtp5g: not implemented on %s: %w", runtime.GOOS, errors.ErrUnsupported)

type client struct{}

type subscription struct{}

func newClient() (*client, error)                                { return nil, errUnsupportedOS }
func (*client) Close() error                                     { return errUnsupportedOS }
func (*client) version() (string, error)                         { return "", errUnsupportedOS }
func (*client) features() (Features, error)                      { return 0, errUnsupportedOS }
func (*client) families() ([]Family, error)                      { return nil, errUnsupportedOS }
func (*client) alive() error                                     { return errUnsupportedOS }
func (*client) qers() ([]QER, error)                             { return nil, errUnsupportedOS }
func (*client) pdrs() ([]PDR, error)                             { return nil, errUnsupportedOS }
func (*client) fars() ([]FAR, error)                             { return nil, errUnsupportedOS }
func (*client) markLayout() (MarkLayout, error)                  { return MarkLayout{}, errUnsupportedOS }
func (*client) setMarkMode(MarkMode) error                       { return errUnsupportedOS }
func (*client) policer() (bool, error)                           { return false, errUnsupportedOS }
func (*client) setPolicer(bool) error                            { return errUnsupportedOS }
func (*client) subscribe(context.Context) (*Subscription, error) { return nil, errUnsupportedOS }
func (*subscription) receive() ([]Event, error)                  { return nil, errUnsupportedOS }
func (*subscription) close() error                               { return errUnsupportedOS }
func (*subscription) setReadBuffer(int) error                    { return errUnsupportedOS }
