package cloud

import "strings"

// Burstable types (T2, T3, T3a, T4g) give each vCPU a baseline share of a
// core; above it they spend CPU credits. Launched in unlimited mode (T3,
// T3a and T4g by default), a node that runs at full CPU for good pays for
// the surplus credits at a flat rate per vCPU-hour. Planned nodes are
// packed to their full CPU, so their price is the sustained one:
//
//	hourly price + vCPUs × (1 − baseline share per vCPU) × surplus rate
//
// Baseline shares are AWS's "baseline utilization per vCPU" table of the
// EC2 User Guide (burstable-credits-baseline-concepts); surplus rates are
// the Linux "T2/T3/T3a/T4g Unlimited Mode Pricing" of the EC2 On-Demand
// pricing page: $0.05 per vCPU-hour for T2, T3 and T3a, $0.04 for T4g.
var (
	burstableBaseline = map[string]map[string]float64{
		"t2": {"nano": 0.05, "micro": 0.10, "small": 0.20, "medium": 0.20, "large": 0.30, "xlarge": 0.225, "2xlarge": 0.17},
		"t3": t3Baseline, "t3a": t3Baseline, "t4g": t3Baseline,
	}
	t3Baseline         = map[string]float64{"nano": 0.05, "micro": 0.10, "small": 0.20, "medium": 0.20, "large": 0.30, "xlarge": 0.40, "2xlarge": 0.40}
	burstableSurcharge = map[string]float64{"t2": 0.05, "t3": 0.05, "t3a": 0.05, "t4g": 0.04}
)

// BurstableBaseline returns the baseline share of a vCPU a burstable type
// sustains without surplus credits, and whether the type is burstable.
func BurstableBaseline(name string) (float64, bool) {
	family, size, ok := strings.Cut(name, ".")
	if !ok {
		return 0, false
	}
	share, ok := burstableBaseline[family][size]
	return share, ok
}

// SustainedSurcharge returns what a burstable type costs per hour on top of
// its price when every vCPU runs flat out (see above); 0 for other types.
func SustainedSurcharge(it *InstanceType) float64 {
	share, ok := BurstableBaseline(it.Name)
	if !ok {
		return 0
	}
	family, _, _ := strings.Cut(it.Name, ".")
	return float64(it.CPU) / 1000 * (1 - share) * burstableSurcharge[family]
}

// PriceSustained adds the sustained-use surcharge of a burstable type to
// every one of its offerings (spot included: surplus credits cost the
// same); other types are left as they are. Every provider of AWS prices
// applies it once, to list prices: explain's embedded catalog
// (plan.Catalog), the simulator and the AWS provider.
func PriceSustained(it *InstanceType) {
	extra := SustainedSurcharge(it)
	if extra == 0 {
		return
	}
	for i := range it.Offerings {
		it.Offerings[i].Price = roundPrice(it.Offerings[i].Price + extra)
	}
}

// roundPrice rounds to a millionth of a dollar, as plans round totals.
func roundPrice(p float64) float64 { return float64(int64(p*1e6+0.5)) / 1e6 }
