package ab

import "math"

// t975 holds the two-sided 95% Student t quantiles for 1..30 degrees of
// freedom.
var t975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// TQuantile95 returns the 0.975 quantile of Student's t with df degrees of
// freedom (df >= 1); beyond 30 it interpolates toward 1.960 in 1/df.
func TQuantile95(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df <= len(t975):
		return t975[df-1]
	case df <= 40:
		return 2.042 + (2.021-2.042)*(1/30.0-1/float64(df))/(1/30.0-1/40.0)
	case df <= 60:
		return 2.021 + (2.000-2.021)*(1/40.0-1/float64(df))/(1/40.0-1/60.0)
	case df <= 120:
		return 2.000 + (1.980-2.000)*(1/60.0-1/float64(df))/(1/60.0-1/120.0)
	default:
		return 1.960 + (1.980-1.960)*120/float64(df)
	}
}

// Estimate is a sample mean with its 95% confidence interval.
type Estimate struct {
	// Mean of the samples.
	Mean float64 `json:"mean"`
	// Half is the CI half-width (mean ± half); NaN-free: 0 with one sample.
	Half float64 `json:"ci95_half"`
	// Lo and Hi are the CI bounds.
	Lo float64 `json:"ci95_lo"`
	Hi float64 `json:"ci95_hi"`
	// N is the number of samples; SD their standard deviation.
	N  int     `json:"n"`
	SD float64 `json:"sd"`
}

// MeanCI returns the mean and the 95% Student-t confidence interval of xs.
// With one sample the interval has zero width (no spread is known); with
// none, everything is zero.
func MeanCI(xs []float64) Estimate {
	n := len(xs)
	if n == 0 {
		return Estimate{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(n)
	e := Estimate{Mean: m, Lo: m, Hi: m, N: n}
	if n < 2 {
		return e
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	e.SD = math.Sqrt(ss / float64(n-1))
	e.Half = TQuantile95(n-1) * e.SD / math.Sqrt(float64(n))
	e.Lo, e.Hi = m-e.Half, m+e.Half
	return e
}
