package gtpu

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// Counters are the packet counts of one program, summed over CPUs.
type Counters struct {
	// NotGTP packets were not IPv4/UDP 2152/GTPv1 and were left alone.
	NotGTP uint64
	// Hit packets matched a (TEID, QFI) or QFI-only entry.
	Hit uint64
	// Miss packets carried a QFI no entry claims.
	Miss uint64
	// NoQFI packets were GTP-U without a readable PDU Session Container.
	NoQFI uint64
	// SDFHit packets matched an SDF rule of their TEID's session.
	SDFHit uint64
	// FragHit non-first fragments took their first fragment's class or
	// mark; FragMiss ones found none (their first was not seen) and were
	// left alone.
	FragHit, FragMiss uint64
}

// Stats are the counters of the downlink (N3 egress) and uplink (N3
// ingress) programs.
type Stats struct {
	Downlink Counters
	Uplink   Counters
}

const statMax = 7

// Stats reads the per-CPU counters and sums them.
func (o *Objects) Stats() (Stats, error) { return readStats(o.objs.Stats) }

func readStats(m *ebpf.Map) (Stats, error) {
	var out Stats
	for i := uint32(0); i < 2*statMax; i++ {
		var per []uint64
		if err := m.Lookup(i, &per); err != nil {
			return out, fmt.Errorf("gtpu bpf: map stats: read %d: %w", i, err)
		}
		var sum uint64
		for _, v := range per {
			sum += v
		}
		c := &out.Downlink
		if i >= statMax {
			c = &out.Uplink
		}
		switch i % statMax {
		case 0:
			c.NotGTP = sum
		case 1:
			c.Hit = sum
		case 2:
			c.Miss = sum
		case 3:
			c.NoQFI = sum
		case 4:
			c.SDFHit = sum
		case 5:
			c.FragHit = sum
		case 6:
			c.FragMiss = sum
		}
	}
	return out, nil
}
