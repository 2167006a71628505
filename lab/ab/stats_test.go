package ab

import (
	"math"
	"testing"
)

func TestTQuantile95(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706, 2: 4.303, 9: 2.262, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980} {
		if got := TQuantile95(df); math.Abs(got-want) > 1e-3 {
			t.Errorf("t(%d) = %.4f, want %.3f", df, got, want)
		}
	}
	if got := TQuantile95(100000); math.Abs(got-1.960) > 1e-3 {
		t.Errorf("t(inf) = %.4f", got)
	}
	if !math.IsNaN(TQuantile95(0)) {
		t.Error("t(0) is not NaN")
	}
}

func TestMeanCI(t *testing.T) {
	// Samples 9, 10, 11: mean 10, sd 1, half = 4.303/sqrt(3).
	e := MeanCI([]float64{9, 10, 11})
	want := 4.303 / math.Sqrt(3)
	if e.Mean != 10 || math.Abs(e.SD-1) > 1e-12 || math.Abs(e.Half-want) > 1e-9 || e.N != 3 {
		t.Fatalf("MeanCI = %+v, want mean 10 sd 1 half %.4f", e, want)
	}
	if e := MeanCI([]float64{5}); e.Mean != 5 || e.Half != 0 || e.N != 1 {
		t.Fatalf("one sample: %+v", e)
	}
	if e := MeanCI(nil); e != (Estimate{}) {
		t.Fatalf("no samples: %+v", e)
	}
}
