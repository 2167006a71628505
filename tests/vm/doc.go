// Package vm boots Debian 12's 6.1 kernel under qemu (TCG) and runs a
// scenario inside it, chrooted into the host's root filesystem shared
// read-only over 9p.
//
// The host kernel here cannot load modules and lacks cls_fw and fq_codel;
// the distro kernel has both, plus everything gtp5g needs. Tests call Run
// with a Config (a shell script, its environment, files to hand over and an
// optional gtp5g.ko) and get back the guest's output and exit status.
//
// See README.md in this directory for the guest layout and timings.
package vm
