package catalog

import (
	"bytes"
	"compress/gzip"
	"slices"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

const gib = int64(1) << 30

func mustLoad(t testing.TB) *Catalog {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestEmbeddedSize(t *testing.T) {
	if n := len(embedded); n >= 2<<20 {
		t.Errorf("embedded catalog is %d bytes, want < 2 MiB", n)
	}
}

func TestLookupShapes(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		name            string
		vcpu            int64
		memGiB          int64
		arch            string
		enis, ipv4      int
		gpu             int64
		gpuName, gpuMfr string
	}{
		{name: "m5.large", vcpu: 2, memGiB: 8, arch: "amd64", enis: 3, ipv4: 10},
		{name: "m5.xlarge", vcpu: 4, memGiB: 16, arch: "amd64", enis: 4, ipv4: 15},
		{name: "c5.xlarge", vcpu: 4, memGiB: 8, arch: "amd64", enis: 4, ipv4: 15},
		{name: "r5.large", vcpu: 2, memGiB: 16, arch: "amd64", enis: 3, ipv4: 10},
		{name: "m7g.large", vcpu: 2, memGiB: 8, arch: "arm64", enis: 3, ipv4: 10},
		{name: "g4dn.xlarge", vcpu: 4, memGiB: 16, arch: "amd64", enis: 3, ipv4: 10, gpu: 1, gpuName: "t4", gpuMfr: "nvidia"},
		{name: "g5.xlarge", vcpu: 4, memGiB: 16, arch: "amd64", enis: 4, ipv4: 15, gpu: 1, gpuName: "a10g", gpuMfr: "nvidia"},
		{name: "p4d.24xlarge", vcpu: 96, memGiB: 1152, arch: "amd64", enis: 60, ipv4: 50, gpu: 8, gpuName: "a100", gpuMfr: "nvidia"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.Lookup(tt.name)
			if !ok {
				t.Fatalf("Lookup(%q) not found", tt.name)
			}
			want := cloud.InstanceType{
				Name: tt.name, CPU: tt.vcpu * 1000, Memory: tt.memGiB * gib,
				GPU: tt.gpu, GPUName: tt.gpuName, GPUManufacturer: tt.gpuMfr,
				Architecture: tt.arch, MaxENIs: tt.enis, IPv4PerENI: tt.ipv4,
			}
			if got.Name != want.Name || got.CPU != want.CPU || got.Memory != want.Memory ||
				got.GPU != want.GPU || got.GPUName != want.GPUName || got.GPUManufacturer != want.GPUManufacturer ||
				got.Architecture != want.Architecture || got.MaxENIs != want.MaxENIs || got.IPv4PerENI != want.IPv4PerENI ||
				got.Pods != 0 || got.Overhead != nil || got.Offerings != nil {
				t.Errorf("Lookup(%q) = %+v\nwant %+v", tt.name, got, want)
			}
		})
	}
	for _, name := range []string{"no.such", "", "mac2.metal", "inf2.xlarge"} {
		got, ok := c.Lookup(name)
		if name == "inf2.xlarge" { // present, but Inferentia is no GPU
			if !ok || got.GPU != 0 {
				t.Errorf("Lookup(%q) = %+v, %v; want present without GPU", name, got, ok)
			}
			continue
		}
		if ok {
			t.Errorf("Lookup(%q) = %+v, want not found", name, got)
		}
	}
}

func TestRegionsAndZones(t *testing.T) {
	c := mustLoad(t)
	regions := c.Regions()
	if !slices.IsSorted(regions) || len(regions) < 20 {
		t.Fatalf("Regions() = %v, want sorted, ≥ 20", regions)
	}
	for _, r := range []string{"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1", "us-gov-west-1"} {
		if !slices.Contains(regions, r) {
			t.Errorf("Regions() lacks %s", r)
		}
	}
	for _, r := range regions {
		if strings.Count(r, "-") > 3 || strings.Contains(r, "-wl") {
			t.Errorf("Regions() has a local or Wavelength zone %s", r)
		}
		zs := c.Zones(r)
		if len(zs) < 2 || !slices.IsSorted(zs) {
			t.Errorf("Zones(%s) = %v, want sorted, ≥ 2", r, zs)
		}
		for _, z := range zs {
			if len(z) != len(r)+1 || !strings.HasPrefix(z, r) {
				t.Errorf("Zones(%s) has %q", r, z)
			}
		}
	}
	if zs := c.Zones("us-east-1"); len(zs) < 3 {
		t.Errorf("Zones(us-east-1) = %v, want ≥ 3", zs)
	}
	if zs := c.Zones("nowhere-1"); zs != nil {
		t.Errorf("Zones(nowhere-1) = %v, want nil", zs)
	}
	// The returned slices are copies.
	c.Regions()[0] = "x"
	c.Zones("us-east-1")[0] = "x"
	if c.Regions()[0] == "x" || c.Zones("us-east-1")[0] == "x" {
		t.Error("Regions or Zones returned internal state")
	}
}

func TestInstanceTypes(t *testing.T) {
	c := mustLoad(t)
	for _, tt := range []struct {
		region   string
		minTypes int
	}{
		{"us-east-1", 500},
		{"us-west-2", 500},
		{"eu-west-1", 400},
		{"us-gov-west-1", 100},
	} {
		t.Run(tt.region, func(t *testing.T) {
			its, err := c.InstanceTypes(tt.region)
			if err != nil {
				t.Fatal(err)
			}
			if len(its) < tt.minTypes {
				t.Errorf("%d types, want ≥ %d", len(its), tt.minTypes)
			}
			zones := c.Zones(tt.region)
			if !slices.IsSortedFunc(its, func(a, b cloud.InstanceType) int { return strings.Compare(a.Name, b.Name) }) {
				t.Error("types not sorted by name")
			}
			for _, it := range its {
				if len(it.Offerings) == 0 {
					t.Errorf("%s has no offerings", it.Name)
				}
				for _, o := range it.Offerings {
					if !(o.Price > 0) || o.Price > 1000 {
						t.Errorf("%s %+v: bad price", it.Name, o)
					}
					if !slices.Contains(zones, o.Zone) {
						t.Errorf("%s %+v: zone not in region", it.Name, o)
					}
					if o.CapacityType != cloud.CapacityTypeOnDemand && o.CapacityType != cloud.CapacityTypeSpot {
						t.Errorf("%s %+v: bad capacity type", it.Name, o)
					}
				}
				if it.CPU <= 0 || it.Memory <= 0 || it.Architecture == "" {
					t.Errorf("%s: bad shape %+v", it.Name, it)
				}
			}
		})
	}
}

func offering(it cloud.InstanceType, zone, ct string) (cloud.Offering, bool) {
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == ct {
			return o, true
		}
	}
	return cloud.Offering{}, false
}

func TestPricesUSEast1(t *testing.T) {
	c := mustLoad(t)
	its, err := c.InstanceTypes("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cloud.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	m5, ok := byName["m5.large"]
	if !ok {
		t.Fatal("no m5.large in us-east-1")
	}
	var odZones int
	for _, z := range c.Zones("us-east-1") {
		if o, ok := offering(m5, z, cloud.CapacityTypeOnDemand); ok {
			odZones++
			if o.Price < 0.05 || o.Price > 0.15 {
				t.Errorf("m5.large on-demand in %s = %v, want 0.05–0.15", z, o.Price)
			}
			if s, ok := offering(m5, z, cloud.CapacityTypeSpot); !ok || s.Price >= o.Price {
				t.Errorf("m5.large spot in %s = %+v, want below on-demand %v", z, s, o.Price)
			}
		}
	}
	if odZones < 3 {
		t.Errorf("m5.large on-demand in %d zones, want ≥ 3", odZones)
	}

	// Spot is cheaper than on-demand for most types.
	var both, cheaper int
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType != cloud.CapacityTypeOnDemand {
				continue
			}
			if s, ok := offering(it, o.Zone, cloud.CapacityTypeSpot); ok {
				both++
				if s.Price < o.Price {
					cheaper++
				}
			}
			break
		}
	}
	if both < 300 || float64(cheaper) < 0.9*float64(both) {
		t.Errorf("spot cheaper than on-demand for %d of %d types, want ≥ 90%% of ≥ 300", cheaper, both)
	}

	// Bigger sizes of a family cost more.
	for _, pair := range [][2]string{{"m5.large", "m5.xlarge"}, {"c5.xlarge", "c5.2xlarge"}, {"m7g.large", "m7g.xlarge"}} {
		a, _ := offering(byName[pair[0]], "us-east-1a", cloud.CapacityTypeOnDemand)
		b, _ := offering(byName[pair[1]], "us-east-1a", cloud.CapacityTypeOnDemand)
		if !(a.Price > 0 && b.Price > a.Price) {
			t.Errorf("on-demand %s = %v, %s = %v; want 0 < first < second", pair[0], a.Price, pair[1], b.Price)
		}
	}
}

// TestSpotPricesAreNotOutliers checks that no spot price a plan leans on is
// far below its family's: the source quoted r6in.large at 13 % of on-demand
// in us-east-1 while r6in.xlarge was at 42 % (hack/gencatalog raises such
// outliers to the family's median ratio). Whole families that are cheap in
// spot keep their price: m8gd is at 11 % in every size.
func TestSpotPricesAreNotOutliers(t *testing.T) {
	c := mustLoad(t)
	for _, region := range []string{"us-east-1", "eu-west-1", "ap-northeast-2"} {
		its, err := c.InstanceTypes(region)
		if err != nil {
			t.Fatal(err)
		}
		ratio := map[string]float64{}
		families := map[string][]float64{}
		for _, it := range its {
			od, okOD := offering(it, it.Offerings[0].Zone, cloud.CapacityTypeOnDemand)
			spot, okSpot := offering(it, it.Offerings[0].Zone, cloud.CapacityTypeSpot)
			if !okOD || !okSpot || od.Price <= 0 {
				continue
			}
			ratio[it.Name] = spot.Price / od.Price
			family, _, _ := strings.Cut(it.Name, ".")
			families[family] = append(families[family], spot.Price/od.Price)
		}
		for name, r := range ratio {
			family, _, _ := strings.Cut(name, ".")
			fr := families[family]
			if len(fr) < 3 {
				continue
			}
			slices.Sort(fr)
			if m := fr[len(fr)/2]; r < 0.4*m {
				t.Errorf("%s %s: spot at %.0f%% of on-demand, its family's median is %.0f%%", region, name, 100*r, 100*m)
			}
		}
		if region != "us-east-1" {
			continue
		}
		for name, want := range map[string][2]float64{"r6in.large": {0.25, 0.5}, "m5.large": {0.25, 0.45}, "m8gd.large": {0.1, 0.13}} {
			if r := ratio[name]; r < want[0] || r > want[1] {
				t.Errorf("%s %s: spot at %.3f of on-demand, want %v–%v", region, name, r, want[0], want[1])
			}
		}
	}
}

func TestDate(t *testing.T) {
	c := mustLoad(t)
	// The newest data: Karpenter v1.15.2's GovCloud on-demand table.
	if d := c.Date(); d != "2026-08-24" {
		t.Errorf("Date() = %q, want the newest data's date 2026-08-24", d)
	}
	for _, tt := range []struct{ region, od, spot string }{
		// Karpenter's us-east-1 table; spot prices only from ec2-instances-info.
		{"us-east-1", "2026-07-20", "2025-05-28"},
		{"eu-west-1", "2025-05-28", "2025-05-28"},
		{"us-west-2", "2025-05-28", "2025-05-28"},
		// GovCloud: no spot prices in any source.
		{"us-gov-west-1", "2026-08-24", ""},
		{"nowhere-1", "", ""},
	} {
		if od, spot := c.PriceDates(tt.region); od != tt.od || spot != tt.spot {
			t.Errorf("PriceDates(%s) = %q, %q; want %q, %q", tt.region, od, spot, tt.od, tt.spot)
		}
	}
}

// TestTypesLaunchedSinceTheOldSnapshot checks types ec2-instances-info
// (2025-05-28) does not know: their shapes (from Karpenter's reference page),
// their us-east-1 on-demand prices (Karpenter v1.15.2's table), no spot
// price (no source has one), every zone, and no offering outside the
// regions Karpenter's tables price.
func TestTypesLaunchedSinceTheOldSnapshot(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		name                 string
		vcpu, memGiB         int64
		arch                 string
		gpu                  int64
		gpuName, gpuMfr, cpu string
		od                   float64 // us-east-1, USD/h
	}{
		{name: "c8i.large", vcpu: 2, memGiB: 4, arch: "amd64", cpu: "intel", od: 0.09371},
		{name: "m8a.xlarge", vcpu: 4, memGiB: 16, arch: "amd64", cpu: "amd", od: 0.24344},
		{name: "m9g.large", vcpu: 2, memGiB: 8, arch: "arm64", cpu: "aws", od: 0.09784},
		{name: "g7e.2xlarge", vcpu: 8, memGiB: 64, arch: "amd64", gpu: 1, gpuName: "rtx-pro-server-6000", gpuMfr: "nvidia", cpu: "intel", od: 3.3631},
		{name: "p6-b300.48xlarge", vcpu: 192, memGiB: 4096, arch: "amd64", gpu: 8, gpuName: "b300", gpuMfr: "nvidia", cpu: "intel", od: 142.42},
	}
	east, err := c.InstanceTypes("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	west, err := c.InstanceTypes("eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.Lookup(tt.name)
			if !ok {
				t.Fatalf("Lookup(%q) not found", tt.name)
			}
			if got.CPU != tt.vcpu*1000 || got.Memory != tt.memGiB*gib || got.Architecture != tt.arch || got.GPU != tt.gpu ||
				got.GPUName != tt.gpuName || got.GPUManufacturer != tt.gpuMfr || got.CPUManufacturer != tt.cpu || got.MaxENIs == 0 {
				t.Errorf("Lookup(%q) = %+v", tt.name, got)
			}
			i := slices.IndexFunc(east, func(it cloud.InstanceType) bool { return it.Name == tt.name })
			if i < 0 {
				t.Fatalf("%s not on sale in us-east-1", tt.name)
			}
			if n := len(east[i].Offerings); n != len(c.Zones("us-east-1")) {
				t.Errorf("%s: %d offerings in us-east-1, want on-demand in each of %d zones", tt.name, n, len(c.Zones("us-east-1")))
			}
			for _, o := range east[i].Offerings {
				if o.CapacityType != cloud.CapacityTypeOnDemand || o.Price != tt.od {
					t.Errorf("%s: offering %+v, want on-demand at %v", tt.name, o, tt.od)
				}
			}
			if slices.ContainsFunc(west, func(it cloud.InstanceType) bool { return it.Name == tt.name }) {
				t.Errorf("%s on sale in eu-west-1, which no source prices it in", tt.name)
			}
		})
	}
}

func TestInstanceTypesReturnsCopies(t *testing.T) {
	c := mustLoad(t)
	its, _ := c.InstanceTypes("us-east-1")
	its[0].Offerings[0].Price = -1
	its[0].Name = "changed"
	again, _ := c.InstanceTypes("us-east-1")
	if again[0].Name == "changed" || again[0].Offerings[0].Price == -1 {
		t.Error("InstanceTypes returned internal state")
	}
	if it, _ := c.Lookup(again[0].Name); it.Offerings != nil {
		t.Error("Lookup returned offerings")
	}
}

func TestUnknownRegion(t *testing.T) {
	c := mustLoad(t)
	for _, r := range []string{"us-east-9", "", "mars-north-1", "us-west-2-lax-1"} {
		its, err := c.InstanceTypes(r)
		if err == nil {
			t.Errorf("InstanceTypes(%q) = %d types, want error", r, len(its))
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+r+`"`) || !strings.Contains(msg, "us-east-1") && !strings.Contains(msg, "af-south-1") {
			t.Errorf("InstanceTypes(%q) error %q: want the region named and valid ones listed", r, msg)
		}
	}
}

func TestSource(t *testing.T) {
	s := mustLoad(t).Source()
	for _, want := range []string{"ec2-instances-info", "2025-05-28", "karpenter-provider-aws v1.15.2", "2026-07-20", "2026-08-24", "instance-types.md", "2026-07-11"} {
		if !strings.Contains(s, want) {
			t.Errorf("Source() = %q, want it to mention %q", s, want)
		}
	}
	if strings.Contains(s, "\n") {
		t.Errorf("Source() = %q, want one line", s)
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestDecodePriceDates(t *testing.T) {
	const v3 = "S\tsrc\nD\t2026-03-04\nZ\tr-1\tab\nZ\tr-2\tab\nT\tx.large\t2\t8192\tamd64\t3\t10\t0\t\t\n" +
		"R\tr-1\t2026-03-04\t2025-01-02\nP\tx.large\t0.1\t0.03\t\nR\tr-2\nP\tx.large\t0.1\t\t\n"
	c, err := decode(gzipped(v3))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	for _, tt := range []struct{ region, od, spot string }{
		{"r-1", "2026-03-04", "2025-01-02"},
		{"r-2", "2026-03-04", ""}, // no dates: the D date; no spot price: no spot date
		{"r-3", "", ""},
	} {
		if od, spot := c.PriceDates(tt.region); od != tt.od || spot != tt.spot {
			t.Errorf("PriceDates(%s) = %q, %q; want %q, %q", tt.region, od, spot, tt.od, tt.spot)
		}
	}
}

func TestDecodeRejectsBadData(t *testing.T) {
	const good = "S\tsrc\nZ\tr-1\tab\nT\tx.large\t2\t8192\tamd64\t3\t10\t0\t\t\nR\tr-1\nP\tx.large\t0.1\t0.03\tb\n"
	c, err := decode(gzipped(good))
	if err != nil {
		t.Fatalf("decode(good): %v", err)
	}
	its, err := c.InstanceTypes("r-1")
	if err != nil || len(its) != 1 || len(its[0].Offerings) != 2 || its[0].Offerings[0].Zone != "r-1b" {
		t.Fatalf("decode(good) → %+v, %v", its, err)
	}
	for name, bad := range map[string]string{
		"not gzip":      "",
		"unknown rec":   good + "X\t1\n",
		"unknown type":  good + "P\ty.large\t0.1\t\t\n",
		"bad price":     good + "P\tx.large\tabc\t\t\n",
		"no price":      good + "P\tx.large\t\t\t\n",
		"bad zone":      good + "P\tx.large\t0.1\t\tc\n",
		"bad arch":      strings.Replace(good, "amd64", "sparc", 1),
		"bad cpu":       strings.Replace(good, "\t2\t", "\tx\t", 1),
		"short T":       strings.Replace(good, "\t0\t\t\n", "\n", 1),
		"P before R":    "S\tsrc\nZ\tr-1\tab\nT\tx.large\t2\t8192\tamd64\t3\t10\t0\t\t\nP\tx.large\t0.1\t0.03\tb\n",
		"R without Z":   good + "R\tr-2\n",
		"R one date":    strings.Replace(good, "R\tr-1\n", "R\tr-1\t2026-01-02\n", 1),
		"R bad date":    strings.Replace(good, "R\tr-1\n", "R\tr-1\t2026-01-02\t2026-13-01\n", 1),
		"bad D":         good + "D\t2026-1-2\n",
		"empty catalog": "# nothing\n",
	} {
		data := gzipped(bad)
		if name == "not gzip" {
			data = []byte("plain text")
		}
		if _, err := decode(data); err == nil {
			t.Errorf("%s: decode succeeded, want error", name)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(embedded); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInstanceTypes(b *testing.B) {
	c := mustLoad(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.InstanceTypes("us-east-1"); err != nil {
			b.Fatal(err)
		}
	}
}
