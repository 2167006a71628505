package shaper

// Key is what a classifier binds a flow class by.
type Key struct {
	// Mark is the skb->mark (0: none).
	Mark uint32
	// TEID and QFI identify the flow's GTP-U packets (TEID 0: by QFI
	// alone, or none).
	TEID uint32
	QFI  uint8
}

// Counters are one class's kernel counters.
type Counters struct {
	// Bytes and Packets the class sent.
	Bytes, Packets uint64
	// Drops counts packets dropped at the class (its leaf queue full).
	Drops uint64
	// Overlimits counts times the class was over its rate or ceil.
	Overlimits uint64
	// Backlog and Qlen are bytes and packets queued now.
	Backlog, Qlen uint64
}

// FlowCounters are one flow class's counters with what names the class.
type FlowCounters struct {
	Flow FlowID
	// Class is the class's numeric id, the backend's own (HTB: major<<16 |
	// minor).
	Class uint32
	// QFI is the flow's QoS Flow Identifier.
	QFI uint8
	Counters
}

// ClassState is one class as a plan or the kernel has it.
type ClassState struct {
	// Handle is the class's id as its backend writes it, opaque here (HTB:
	// tc's "6771:10").
	Handle string
	// Parent is the parent class's handle ("" under the root).
	Parent string
	// Role is what the class is for.
	Role Role
	// Flow, Name, GBR and MBR are the flow's (planned classes only: the
	// kernel does not know flow ids).
	Flow     FlowID
	Name     string
	GBR, MBR uint64
	// SEID is a session class's session (planned classes only).
	SEID uint64
	// Key is what binds the class's packets (flow classes).
	Key Key
	// Rate and Ceil are the class's rates (bit/s).
	Rate, Ceil uint64
	// Counters are the class's counters (Inspect only).
	Counters Counters
}

// Inspection is what a device enforces now, as a backend reads it.
type Inspection struct {
	// Dev and Backend name the device and the backend.
	Dev, Backend string
	// Owned is true when the device holds this backend's tree; Root is
	// the tree's root as the backend writes it (HTB: tc's "6771:").
	Owned bool
	Root  string
	// Classifier and Leaf are the classifier and leaf qdisc kinds in use,
	// the backend's own names (empty for a backend without them).
	Classifier string
	Leaf       string
	// Accounting is the bytes the classes count, as the kernel's tree says
	// (a size table on the root: packet); Overhead the bytes of each frame
	// they leave out (packet accounting). Class counters count the same
	// bytes.
	Accounting Accounting
	Overhead   uint32
	// Default is the handle of the class unclassified packets go to.
	Default string
	// Classes are the tree's classes with their keys and counters.
	Classes []ClassState
	// Attachments are classifier programs outside the tree (GTP-U
	// programs on clsact hooks).
	Attachments []Attachment
	// Unplaced counts packets the classifier saw but could bind to no flow
	// class (nil when it cannot tell: then the default class's counters
	// are the signal).
	Unplaced *uint64
	// Problems are inconsistencies found while reading (a classifier
	// entry pointing at a class that does not exist).
	Problems []string
}

// FlowClasses returns the flow classes.
func (in *Inspection) FlowClasses() []ClassState {
	var out []ClassState
	for _, c := range in.Classes {
		if c.Role == RoleFlow {
			out = append(out, c)
		}
	}
	return out
}

// Class returns the class with the given handle.
func (in *Inspection) Class(handle string) (ClassState, bool) {
	for _, c := range in.Classes {
		if c.Handle == handle {
			return c, true
		}
	}
	return ClassState{}, false
}

// Attachment is one classifier program attached outside the tree.
type Attachment struct {
	// Dev and Hook say where ("egress", "ingress").
	Dev  string `json:"dev"`
	Hook string `json:"hook"`
	// Name is the filter's name; ProgramID the kernel's program id.
	Name      string `json:"filter"`
	ProgramID uint32 `json:"program_id"`
	// Entries counts the entries of the map the program looks up.
	Entries int `json:"entries"`
	// SDFTEIDs counts the TEIDs whose sessions' SDF rules the program
	// matches (the edt program on stock gtp5g; 0 otherwise).
	SDFTEIDs int `json:"sdf_teids,omitempty"`
	// Counters are the program's packet counters by name ("hit", "miss",
	// ...), nil when it counts nothing.
	Counters map[string]uint64 `json:"counters,omitempty"`
}
