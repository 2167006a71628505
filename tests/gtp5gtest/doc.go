// Package gtp5gtest is shared test plumbing for tests that drive a real
// gtp5g module (in the Debian-kernel VM or on a UPF host): running code in
// a network namespace, creating gtp5g devices the way free5GC's UPF does
// (a UDP socket on :2152 handed to RTM_NEWLINK with IFLA_GTP5G_* data) and
// installing PDRs, FARs and QERs with go-gtp5gnl v1.4.6, attribute for
// attribute as go-upf sends them.
//
// It is for tests only: helpers take a testing.TB and fail the test on
// error, naming the namespace, device and rule at fault.
package gtp5gtest
