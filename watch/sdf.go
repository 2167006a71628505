package watch

import (
	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
)

// setSDF gives the stock-gtp5g classifier the sessions' SDF rules, so it
// finds each flow by its PDR's filter whatever QFI gtp5g writes, and
// returns the rule view's problems.
func (d *Daemon) setSDF(pdrs []gtpnl.PDR, fars []gtpnl.FAR, flows []shaper.Flow) []qosview.Problem {
	rules, probs := qosview.SDFRules(pdrs, fars, flows)
	if d.shared == nil {
		return probs
	}
	notes, err := d.shared.SetSDF(rules)
	for _, n := range notes {
		d.obs.Note("classifier: " + n)
	}
	if err != nil {
		d.obs.Note("classifier: SDF rules not written: " + err.Error())
	}
	return probs
}
