package shaper

const mbit = 1_000_000

// seedFlows are the seed experiment's three downlink flows (A 15/18, B 5/6,
// C best effort up to 30 Mbit/s).
func seedFlows() []Flow {
	return []Flow{
		{ID: FlowID{SEID: 1, QERID: 1}, Name: "A", QFI: 2, Direction: Downlink, GBR: 15 * mbit, MBR: 18 * mbit, Mark: 2},
		{ID: FlowID{SEID: 1, QERID: 2}, Name: "B", QFI: 3, Direction: Downlink, GBR: 5 * mbit, MBR: 6 * mbit, Mark: 3},
		{ID: FlowID{SEID: 1, QERID: 3}, Name: "C", QFI: 4, Direction: Downlink, MBR: 30 * mbit, Mark: 4},
	}
}
