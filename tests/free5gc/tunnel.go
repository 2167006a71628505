package free5gc

import (
	"fmt"
	"strings"
)

// TunnelCommands writes a dump as go-gtp5gnl's gogtp5g-tunnel calls
// (FARs, then QERs, then PDRs, as go-upf's forwarder orders them; several
// --qer-id per PDR in the SMF's order). Rates are kbit/s, as in PFCP. The
// tool cannot attach URRs to a PDR: the VM's PDRs have none.
func TunnelCommands(d Dump) string {
	var b strings.Builder
	for _, f := range d.FARs {
		fmt.Fprintf(&b, "$T add far upfgtp %d:%d --action 2", f.SEID, f.ID)
		if f.Forwarding != nil && f.Forwarding.OuterHeaderCreation != nil {
			o := f.Forwarding.OuterHeaderCreation
			fmt.Fprintf(&b, " --hdr-creation 256 %d %s %d", o.TEID, o.Peer, o.Port)
		}
		fmt.Fprintf(&b, " || fail \"far %d:%d\"\n", f.SEID, f.ID)
	}
	for _, q := range d.QERs {
		fmt.Fprintf(&b, "$T add qer upfgtp %d:%d --gate-status 0 --qfi %d", q.SEID, q.ID, q.QFI)
		if !q.GBR.IsZero() {
			fmt.Fprintf(&b, " --gbr-ul %d --gbr-dl %d", q.GBR.Uplink/1000, q.GBR.Downlink/1000)
		}
		if !q.MBR.IsZero() {
			fmt.Fprintf(&b, " --mbr-ul %d --mbr-dl %d", q.MBR.Uplink/1000, q.MBR.Downlink/1000)
		}
		fmt.Fprintf(&b, " || fail \"qer %d:%d\"\n", q.SEID, q.ID)
	}
	for _, p := range d.PDRs {
		fmt.Fprintf(&b, "$T add pdr upfgtp %d:%d --pcd %d --ue-ipv4 %s --far-id %d", p.SEID, p.ID, p.Precedence, p.PDI.UEAddr, p.FARID)
		if p.PDI.FTEID != nil {
			fmt.Fprintf(&b, " --f-teid %d %s --hdr-rm 0", p.PDI.FTEID.TEID, p.PDI.FTEID.Addr)
		}
		if p.PDI.SDF != nil && p.PDI.SDF.Rule != nil {
			r := p.PDI.SDF.Rule
			fmt.Fprintf(&b, " --sdf-desp 'permit out ip from %s to %s'", r.Src, r.Dst)
		}
		for _, q := range p.QERIDs {
			fmt.Fprintf(&b, " --qer-id %d", q)
		}
		fmt.Fprintf(&b, " || fail \"pdr %d:%d\"\n", p.SEID, p.ID)
	}
	return b.String()
}
