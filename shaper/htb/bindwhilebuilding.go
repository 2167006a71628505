package htb

import (
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// bindChunk is how often a run that creates many flow classes binds the
// ones it has created so far: after Classes new flow classes or Every,
// whichever comes first. A build of 65,518 classes takes minutes (a class
// create walks every class of the qdisc); binding only at the end would
// leave every flow in the default class all that time, and a build killed
// half-way with nothing bound.
type bindChunk struct {
	Classes int
	Every   time.Duration
}

// defaultBindChunk binds every 1,024 created flow classes or every 2 s: a
// sync reads the classifier back in a full run (tens of ms at 65k entries),
// so a build of 10k classes pays about ten of them.
var defaultBindChunk = bindChunk{Classes: 1024, Every: 2 * time.Second}

// chunkBinder counts a run's created flow classes and says when to bind.
type chunkBinder struct {
	c       bindChunk
	created int
	since   time.Time
}

func newChunkBinder(c bindChunk) *chunkBinder { return &chunkBinder{c: c, since: time.Now()} }

// due records one created class of role r and reports whether the classes
// created so far should be bound now.
func (b *chunkBinder) due(r shaper.Role) bool {
	if r != shaper.RoleFlow || b.c.Classes <= 0 {
		return false
	}
	b.created++
	if b.created < b.c.Classes && time.Since(b.since) < b.c.Every {
		return false
	}
	b.created, b.since = 0, time.Now()
	return true
}

// bindExisting binds every desired flow class that exists now (created by
// this run, or there before it and not moved).
func (u *run) bindExisting() error {
	return u.syncClassifier(u.desired.TableOf(func(m uint16) bool {
		_, exists := u.st.classes.Get(m)
		return exists
	}))
}
