package ab

// Summarise computes each arm's statistics across its runs.
func Summarise(res *Results, arms []Arm, scale float64) []ArmSummary {
	var out []ArmSummary
	for _, arm := range arms {
		as := ArmSummary{Arm: arm, Mode: arm.Policy.Mode.String(), LinkRate: float64(arm.Policy.LinkRate) * scale / 1e6}
		var runs []RunResult
		for _, r := range res.RunList {
			if r.Arm == arm.Name {
				runs = append(runs, r)
			}
		}
		as.Runs = len(runs)
		if len(runs) == 0 {
			out = append(out, as)
			continue
		}
		var aggs, frames, counted []float64
		for _, r := range runs {
			aggs = append(aggs, r.Aggregate)
			if r.Frame > 0 {
				frames = append(frames, r.Frame)
				counted = append(counted, r.Counted)
			}
		}
		as.Aggregate = MeanCI(aggs)
		as.Frame, as.Counted = MeanCI(frames).Mean, MeanCI(counted).Mean
		as.Accounting = runs[len(runs)-1].Accounting
		if as.Frame > 0 {
			o := Options{Payload: res.Payload, TCP: res.Proto == "tcp"}
			as.Ceiling = as.LinkRate * payloadOf(&o, as.Frame) / as.Frame
		}
		if as.Ceiling > 0 {
			as.Utilisation = as.Aggregate.Mean / as.Ceiling
		}
		for i := range runs[0].Flows {
			f0 := runs[0].Flows[i]
			fs := FlowSummary{Name: f0.Name, GBR: f0.GBR, MBR: f0.MBR, HasGBR: f0.GBR > 0, HasMBR: hasMBR(f0.MBR, as.LinkRate)}
			var gp, ip, outer, rt []float64
			var delays []*DelayStats
			maxLen := 0
			for _, r := range runs {
				f := r.Flows[i]
				delays = append(delays, f.Delay)
				gp = append(gp, f.Goodput)
				ip = append(ip, f.IP)
				outer = append(outer, f.Outer)
				rt = append(rt, float64(f.Retransmits))
				if f.GBRPass {
					fs.GBRPasses++
				}
				if f.MBRPass {
					fs.MBRPasses++
				}
				maxLen = max(maxLen, len(f.Series))
			}
			fs.Goodput, fs.IP, fs.Outer = MeanCI(gp), MeanCI(ip), MeanCI(outer)
			fs.Retransmits = MeanCI(rt).Mean
			fs.Delay = meanDelay(delays)
			if n := len(runs[0].Flows); as.Aggregate.Mean > 0 {
				fs.Share = fs.Goodput.Mean / (as.Aggregate.Mean / float64(n))
			}
			for s := 0; s < maxLen; s++ {
				var xs []float64
				for _, r := range runs {
					if s < len(r.Flows[i].Series) {
						xs = append(xs, r.Flows[i].Series[s])
					}
				}
				fs.Series = append(fs.Series, MeanCI(xs))
			}
			as.Flows = append(as.Flows, fs)
		}
		out = append(out, as)
	}
	return out
}
