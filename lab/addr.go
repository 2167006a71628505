package lab

import "net/netip"

// Addressing of the lab (fixed: every lab has its own namespaces).
const (
	// UENet holds the UE addresses (ue namespace, behind the gNB).
	UENet = "10.60.0.0/16"
	// DNNet is the N6 subnet; DN endpoints live here.
	DNNet = "192.168.100.0/24"
	// N3Net is the N3 subnet between upf (.1) and gnb (.2).
	N3Net = "10.100.0.0/24"
)

var (
	// UEGateway is the gNB's address on the ue<->gnb link.
	UEGateway = netip.MustParseAddr("10.60.255.254")
	// UPFN3Addr is the UPF's N3 address (GTP-U source).
	UPFN3Addr = netip.MustParseAddr("10.100.0.1")
	// GNBN3Addr is the gNB's N3 address (GTP-U destination).
	GNBN3Addr = netip.MustParseAddr("10.100.0.2")
	// UPFN6Addr is the UPF's N6 address (the DN's gateway toward UEs).
	UPFN6Addr = netip.MustParseAddr("192.168.100.1")
)

// Link names inside the namespaces.
const (
	// N3Dev is the UPF's N3 veth: its egress is where downlink is shaped.
	N3Dev     = "n3-upf"
	gnbN3Dev  = "n3-gnb"
	upfN6Dev  = "n6-upf"
	dnN6Dev   = "n6-dn"
	gnbUEDev  = "ue-gnb"
	ueDev     = "ue0"
	upfTunDev = "n6tun"
	gnbTunDev = "gtun"
	// innerMTU keeps inner packets small enough that GTP-U never fragments
	// on N3 (1500 - 16 - 8 - 20 = 1456): a 1400-byte UDP payload fits.
	innerMTU = 1456
)
