package lab

import (
	"fmt"
	"net/netip"
)

// PDR is one downlink Packet Detection Rule of the UPF stand-in, with what
// its FAR and QER add: the DN endpoint (source of the DN->UE packets)
// selects the flow; the UE address must match the inner destination.
type PDR struct {
	// Name labels the flow ("A"); it joins the PDR to a shaper flow.
	Name string `json:"name" yaml:"name"`
	// SEID is the PFCP session the flow belongs to (one per UE here).
	SEID uint64 `json:"seid" yaml:"seid"`
	// QERID is the id of the flow's QER in that session.
	QERID uint32 `json:"qer" yaml:"qer"`
	// UE is the UE's address (inner destination).
	UE netip.Addr `json:"ue" yaml:"ue"`
	// DN is the DN endpoint (inner source address and port).
	DN netip.AddrPort `json:"dn" yaml:"dn"`
	// UEPort is where the UE's receiver listens (built-in traffic).
	UEPort uint16 `json:"ue_port" yaml:"ue_port"`
	// TEID is the FAR's outer-header-creation TEID toward the gNB.
	TEID uint32 `json:"teid" yaml:"teid"`
	// QFI goes into the PDU Session Container.
	QFI uint8 `json:"qfi" yaml:"qfi"`
	// Mark is the SO_MARK of the socket the flow leaves from (0 = none).
	Mark uint32 `json:"mark" yaml:"mark"`
	// Offered is the sender's offered rate in bit/s of UDP payload
	// (0 = the lab default; for TCP, 0 means as fast as possible).
	Offered float64 `json:"offered,omitempty" yaml:"offered,omitempty"`
}

// SeedPDRs returns the seed's three flows: one UE (10.60.0.1, SEID 1,
// TEID 100), DN endpoints 192.168.100.2:5201, .4:5202 and .5:5203 with
// QFI and mark 2, 3 and 4 (the seed's skb->mark = QFI).
func SeedPDRs() []PDR {
	ue := netip.MustParseAddr("10.60.0.1")
	mk := func(name string, qer uint32, dn string, port uint16, qfi uint8) PDR {
		return PDR{Name: name, SEID: 1, QERID: qer, UE: ue,
			DN: netip.AddrPortFrom(netip.MustParseAddr(dn), port), UEPort: port,
			TEID: 100, QFI: qfi, Mark: uint32(qfi)}
	}
	return []PDR{
		mk("A", 1, "192.168.100.2", 5201, 2),
		mk("B", 2, "192.168.100.4", 5202, 3),
		mk("C", 3, "192.168.100.5", 5203, 4),
	}
}

// ValidatePDRs checks a PDR table: names and DN endpoints unique, addresses
// IPv4 in the lab's ranges (UE in 10.60.0.0/16, DN in 192.168.100.0/24 but
// not .1, the UPF), QFI 6-bit, UE port set.
func ValidatePDRs(pdrs []PDR) error {
	if len(pdrs) == 0 {
		return fmt.Errorf("pdr table is empty")
	}
	ueNet := netip.MustParsePrefix(UENet)
	dnNet := netip.MustParsePrefix(DNNet)
	names := map[string]bool{}
	dns := map[netip.AddrPort]string{}
	ues := map[netip.AddrPort]string{}
	for i, p := range pdrs {
		id := fmt.Sprintf("pdr %d (%s)", i, p.Name)
		if p.Name == "" {
			return fmt.Errorf("%s: no name", id)
		}
		if names[p.Name] {
			return fmt.Errorf("%s: name used twice", id)
		}
		names[p.Name] = true
		if !p.UE.Is4() || !ueNet.Contains(p.UE) || p.UE == UEGateway {
			return fmt.Errorf("%s: ue %v is not an address in %s", id, p.UE, UENet)
		}
		if !p.DN.Addr().Is4() || !dnNet.Contains(p.DN.Addr()) || p.DN.Addr() == UPFN6Addr || p.DN.Port() == 0 {
			return fmt.Errorf("%s: dn %v is not an address:port in %s (other than %v)", id, p.DN, DNNet, UPFN6Addr)
		}
		if o, dup := dns[p.DN]; dup {
			return fmt.Errorf("%s: dn endpoint %v already selects %s", id, p.DN, o)
		}
		dns[p.DN] = p.Name
		if p.UEPort == 0 {
			return fmt.Errorf("%s: ue_port not set", id)
		}
		ue := netip.AddrPortFrom(p.UE, p.UEPort)
		if o, dup := ues[ue]; dup {
			return fmt.Errorf("%s: ue endpoint %v already used by %s", id, ue, o)
		}
		ues[ue] = p.Name
		if p.QFI > 63 {
			return fmt.Errorf("%s: qfi %d is not 6-bit", id, p.QFI)
		}
		if p.Offered < 0 {
			return fmt.Errorf("%s: negative offered rate", id)
		}
	}
	return nil
}

// pdrKey is the lookup key: the inner source (DN endpoint).
type pdrKey struct {
	addr [4]byte
	port uint16
}

// pdrTable is the UPF stand-in's lookup structure.
type pdrTable struct {
	byDN map[pdrKey]int
	pdrs []PDR
}

func newPDRTable(pdrs []PDR) *pdrTable {
	t := &pdrTable{byDN: map[pdrKey]int{}, pdrs: pdrs}
	for i, p := range pdrs {
		t.byDN[pdrKey{p.DN.Addr().As4(), p.DN.Port()}] = i
	}
	return t
}

// match returns the index of the PDR that an inner IPv4 packet (UDP or
// TCP) matches, or -1. The inner destination must be the PDR's UE.
func (t *pdrTable) match(pkt []byte) int {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return -1
	}
	ihl := int(pkt[0]&0x0f) * 4
	proto := pkt[9]
	if ihl < 20 || len(pkt) < ihl+4 || (proto != 6 && proto != 17) {
		return -1
	}
	var k pdrKey
	copy(k.addr[:], pkt[12:16])
	k.port = uint16(pkt[ihl])<<8 | uint16(pkt[ihl+1])
	i, ok := t.byDN[k]
	if !ok {
		return -1
	}
	if t.pdrs[i].UE.As4() != [4]byte(pkt[16:20]) {
		return -1
	}
	return i
}

// TwoUEPDRs returns a two-UE table where both UEs' flows use QFI 2 under
// different contracts: UE 10.60.0.1 (SEID 1, TEID 100, mark 0x10002) and
// UE 10.60.0.2 (SEID 2, TEID 200, mark 0x20002). A QFI-only mark could not
// tell them apart; SEID/TEID/mark can.
func TwoUEPDRs() []PDR {
	return []PDR{
		{Name: "UE1", SEID: 1, QERID: 1, UE: netip.MustParseAddr("10.60.0.1"),
			DN: netip.MustParseAddrPort("192.168.100.2:5201"), UEPort: 5201, TEID: 100, QFI: 2, Mark: 0x10002},
		{Name: "UE2", SEID: 2, QERID: 1, UE: netip.MustParseAddr("10.60.0.2"),
			DN: netip.MustParseAddrPort("192.168.100.3:5201"), UEPort: 5201, TEID: 200, QFI: 2, Mark: 0x20002},
	}
}
