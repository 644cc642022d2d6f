package cloud

import (
	"math"
	"testing"
)

func TestPriceSustained(t *testing.T) {
	tests := []struct {
		name string
		cpu  int64
		// price is the catalog price; want the sustained one.
		price, want float64
	}{
		// 2 vCPUs × (1 − 0.20) × $0.04 = $0.064 on top.
		{"t4g.medium", 2000, 0.0336, 0.0976},
		// 2 vCPUs × (1 − 0.30) × $0.05 = $0.07 on top.
		{"t3.large", 2000, 0.0832, 0.1532},
		// 8 vCPUs × (1 − 0.17) × $0.05 = $0.332 on top.
		{"t2.2xlarge", 8000, 0.3712, 0.7032},
		{"m7i.large", 2000, 0.1008, 0.1008},
		{"t3.huge", 2000, 0.1, 0.1},
		{"t3", 2000, 0.1, 0.1},
	}
	for _, tc := range tests {
		it := InstanceType{Name: tc.name, CPU: tc.cpu, Offerings: []Offering{
			{Zone: "a", CapacityType: CapacityTypeOnDemand, Price: tc.price},
			{Zone: "a", CapacityType: CapacityTypeSpot, Price: tc.price / 2},
		}}
		PriceSustained(&it)
		extra := tc.want - tc.price
		if got := it.Offerings[0].Price; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s on-demand: $%v, want $%v", tc.name, got, tc.want)
		}
		if got := it.Offerings[1].Price; math.Abs(got-(tc.price/2+extra)) > 1e-6 {
			t.Errorf("%s spot: $%v, want $%v", tc.name, got, tc.price/2+extra)
		}
	}
}
