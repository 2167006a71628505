//go:build tools

// Package deps pins the modules gtpqos builds on, so 'go mod tidy' keeps
// them while the packages that use them are being written.
package deps

import (
	_ "github.com/cilium/ebpf"
	_ "github.com/free5gc/go-gtp5gnl"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/mdlayher/genetlink"
	_ "github.com/mdlayher/genetlink/genltest"
	_ "github.com/mdlayher/netlink"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/sirupsen/logrus"
	_ "github.com/vishvananda/netlink"
	_ "gopkg.in/yaml.v3"
)
