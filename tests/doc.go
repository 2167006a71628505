// Package tests holds no code: its subdirectories are the tests that span
// packages (tests/vm: the Debian-kernel VM harness and the real-gtp5g
// scenarios; tests/stock: stock-gtp5g acceptance; tests/layout: the
// layout rules) and the helpers every package's tests share (tests/testenv:
// root and command gates, throwaway network namespaces; tests/gtp5gtest:
// driving a real gtp5g module; tests/shapetest: devices shaped the way the
// daemon shapes them).
package tests
