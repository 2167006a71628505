package edtbackend

import (
	"math/bits"
	"time"
)

// fq's own limits, which a leaf keeps unless the plan sizes it.
const (
	fqDefaultLimit     = 10000
	fqDefaultFlowLimit = 100
)

// horizonPacket is the packet size (bytes) a leaf sized for the horizon
// counts with: fq limits a flow by packets, the program by time, and a
// flow of smaller packets at that rate would fill fq's count first.
const horizonPacket = 256

// horizonLimit is the packet limit, in all and per flow, of an fq leaf
// that holds a flow's whole horizon: budget (the policy's largest delay
// budget, the longest a flow's packets are scheduled ahead) at rate bit/s
// in horizonPacket-byte packets, at least fq's default limit. The
// guaranteed class needs it. The program schedules a flow's packets up to
// budget ahead, so a flow with more than fq's default 100 packets in that
// time (5 Mbit/s of 500-byte packets in 100 ms) had the excess dropped by
// fq after the GBR meter had counted it: its guaranteed part fell below
// the GBR. Its packets are one fq flow (the program gives them the
// class's hash), so the per-flow limit is the whole limit. The guaranteed
// class is never congested (its rate is the admitted GBRs, and the meter
// puts no more than those in it), so what it holds is the horizon's
// packets and no standing queue.
func horizonLimit(rate uint64, budget time.Duration) uint32 {
	n := rate / 8 * uint64(budget) / uint64(time.Second) / horizonPacket
	n = min(n, 1<<24) // a bound on a leaf's memory, whatever the link
	return uint32(max(n, fqDefaultLimit))
}

// Flow table sizes of the shared leaves, as log2 of fq's buckets: fq
// keeps each flow it has seen in the last 3 s in a red-black tree per
// bucket, 1024 buckets unless told, so with a million flows each lookup
// walked a tree of a thousand, a cache miss a level.
const (
	fqFlowsPerBucket = 4
	fqMinBucketsLog  = 10 // fq's default
	fqMaxBucketsLog  = 18 // fq's largest (256 Ki buckets, 2 MiB a leaf)
)

// bucketsLog sizes a shared leaf's flow table for the flows of the room
// sessions the policy asks for (0: DefaultSessions), two a session as the
// maps count them (pacerFor), fqFlowsPerBucket a bucket.
func bucketsLog(room int) uint32 {
	if room <= 0 {
		room = DefaultSessions
	}
	buckets := (uint64(2*room) + fqFlowsPerBucket - 1) / fqFlowsPerBucket
	return uint32(min(max(bits.Len64(buckets-1), fqMinBucketsLog), fqMaxBucketsLog))
}
