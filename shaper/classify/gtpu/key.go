package gtpu

import "fmt"

// Key identifies a QoS flow's packets on N3: the GTP-U TEID and the QFI of
// the PDU Session Container. TEID 0 is a wildcard: the programs fall back to
// (0, QFI) when (TEID, QFI) has no entry, which gives a QFI-only mode.
type Key struct {
	TEID uint32
	QFI  uint8
}

// String formats the key as "teid=T qfi=Q".
func (k Key) String() string { return fmt.Sprintf("teid=%d qfi=%d", k.TEID, k.QFI) }

// Valid reports whether the QFI fits its 6 bits.
func (k Key) Valid() bool { return k.QFI <= 63 }

func (k Key) bpf() gtpuFlowKey { return gtpuFlowKey{Teid: k.TEID, Qfi: k.QFI} }
