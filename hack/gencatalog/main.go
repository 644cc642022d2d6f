// Command gencatalog generates pkg/cloud/catalog/catalog.tsv.gz, the embedded
// AWS instance-type and price snapshot of kubectl-rightsize.
//
// It lives in its own Go module so that its inputs never enter the root
// module's dependency graph. It takes from each source the newest data that
// source has, and says in the catalog which column came from where and of
// which date. Inputs, the modules read from their zips in the Go module
// cache after `go mod download` (none is linked):
//
//   - github.com/cristim/ec2-instances-info (required as
//     github.com/LeanerCloud/ec2-instances-info, see go.mod; 2025-05-28, the
//     newest version on the module proxy): data/instances.json, the
//     instances.vantage.sh (formerly ec2instances.info) EC2 data set, which
//     gives per type vCPUs, memory, GPUs, architecture, ENI limits, the
//     availability-zone IDs per region, and per region the Linux on-demand
//     price, the current spot prices of the zones (an unkeyed list) and the
//     Spot Advisor's average saving. It is the only source of spot prices.
//   - github.com/aws/karpenter-provider-aws (version karpenterVersion):
//     pkg/providers/pricing/zz_generated.pricing_aws{,_us_gov}.go, the
//     initial on-demand price tables (us-east-1, generated 2026-07-20;
//     us-gov-east-1 and us-gov-west-1, 2026-08-24), which replace the older
//     on-demand prices of those regions and price the types
//     ec2-instances-info lacks; pkg/providers/instancetype/zz_generated.vpclimits.go,
//     which fills ENI limits ec2-instances-info lacks, and
//     zz_generated.bandwidth.go, the network bandwidth Karpenter puts in
//     karpenter.k8s.aws/instance-network-bandwidth.
//   - karpenter-instance-types.tsv (factsFile, in this directory): the shapes
//     of the types ec2-instances-info lacks, extracted with -karpenter-doc
//     from Karpenter's generated instance-type reference page, which is not
//     in any module on the proxy (see facts.go). Where both know a type, the
//     generator cross-checks them and keeps ec2-instances-info's columns.
//   - github.com/aws/aws-sdk-go-v2/service/ec2 (sdkVersion): the
//     InstanceType enum, only to count the type names no source prices or
//     gives a shape for.
//
// A type no source gives the shape of is left out and counted in the log.
//
// The per-type label columns follow Karpenter's AWS provider
// (pkg/providers/instancetype/types.go, computeRequirements and
// computeCapacity): GPU memory per GPU in MiB, Neuron accelerators (name,
// manufacturer "aws", device count and NeuronCores), the CPU manufacturer,
// EBS bandwidth and local NVMe size in GB. Labels the sources cannot give
// (hypervisor, encryption in transit, Nitro Enclaves, sustained clock speed)
// are left out; pkg/cloud/catalog says it cannot answer them.
//
// The output is deterministic: the same inputs give byte-identical output.
// See pkg/cloud/catalog/doc.go for the format.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log"
	"maps"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	ec2InfoModule    = "github.com/LeanerCloud/ec2-instances-info"
	karpenterModule  = "github.com/aws/karpenter-provider-aws"
	karpenterVersion = "v1.15.2"
	// sdkModule lists, in its InstanceType enum, every type name EC2 knew at
	// its release; the generator only counts the names no source gives a
	// shape or a price for.
	sdkModule  = "github.com/aws/aws-sdk-go-v2/service/ec2"
	sdkVersion = "v1.349.0"

	// defaultZones are the zone suffixes of a region for which the source
	// lists no availability zones. Every such region in the data set has (at
	// least) three zones.
	defaultZones = "abc"
	// sigDigits is the number of significant digits prices are rounded to.
	sigDigits = 5
)

// regionRE matches the standard regions; local and Wavelength zones, which the
// data set lists as pseudo-regions such as us-west-2-lax-1 or us-east-1-wl1,
// are left out.
var regionRE = regexp.MustCompile(`^[a-z]{2}(-gov)?-[a-z]+-[0-9]+$`)

func main() {
	out := flag.String("out", "../../pkg/cloud/catalog/catalog.tsv.gz", "output file")
	outliers := flag.String("outliers", "", "file to list every spot outlier raised in, one a line")
	doc := flag.String("karpenter-doc", "", "Karpenter's website/content/en/preview/reference/instance-types.md to refresh "+factsFile+" from (with -karpenter-doc-provenance and -karpenter-doc-date)")
	docProv := flag.String("karpenter-doc-provenance", "", "where the -karpenter-doc page comes from: repository, path, commit")
	docDate := flag.String("karpenter-doc-date", "", "the commit date of the -karpenter-doc page, YYYY-MM-DD")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gencatalog: ")

	if *doc != "" {
		if *docProv == "" || len(*docDate) != len("2006-01-02") {
			log.Fatal("-karpenter-doc needs -karpenter-doc-provenance and -karpenter-doc-date YYYY-MM-DD")
		}
		types := readKarpenterDoc(*doc)
		writeFacts(factsFile, types, *docProv, *docDate)
		log.Printf("wrote %s: %d types from %s", factsFile, len(types), *doc)
	}

	ec2Mod := download(ec2InfoModule, "")
	karpMod := download(karpenterModule, karpenterVersion)
	sdkMod := download(sdkModule, sdkVersion)

	insts := readEC2Info(ec2Mod.read("data/instances.json"))
	kpPrices, kpDates := readKarpenterPrices(karpMod)
	kpLimits := readKarpenterVPCLimits(karpMod.path("pkg/providers/instancetype/zz_generated.vpclimits.go"), karpMod.read("pkg/providers/instancetype/zz_generated.vpclimits.go"))
	kpBandwidth := readKarpenterBandwidth(karpMod.path("pkg/providers/instancetype/zz_generated.bandwidth.go"), karpMod.read("pkg/providers/instancetype/zz_generated.bandwidth.go"))
	fs := readFacts(factsFile)
	sdkNames := readSDKInstanceTypes(sdkMod.path("types/enums.go"), sdkMod.read("types/enums.go"))

	cat := build(insts, ec2Mod.date(), kpPrices, kpDates, kpLimits, kpBandwidth, fs, sdkNames)
	var tableDates []string
	for _, d := range kpDates {
		tableDates = append(tableDates, d)
	}
	slices.Sort(tableDates)
	tableDates = slices.Compact(tableDates)
	cat.source = fmt.Sprintf("AWS EC2 catalog: shapes, zones, spot prices and other regions' on-demand prices from %s %s (instances.vantage.sh data, MIT, %s); "+
		"shapes of newer types from %s (Apache-2.0, %s); on-demand prices of %s from %s %s (Apache-2.0, tables of %s)",
		"github.com/cristim/ec2-instances-info", ec2Mod.Version, ec2Mod.date(), fs.provenance, fs.date,
		strings.Join(slices.Sorted(maps.Keys(kpDates)), ", "), karpenterModule, karpenterVersion, strings.Join(tableDates, ", "))

	// The catalog's date is that of its newest data: a column older than
	// that (spot prices, other regions' on-demand prices) says so on its
	// region's R line and in the source line.
	cat.date = slices.Max(append(tableDates, ec2Mod.date(), fs.date))
	if *outliers != "" {
		if err := os.WriteFile(*outliers, []byte(strings.Join(cat.raised, "\n")+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	data := cat.encode()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	// The zero header has no name and no modification time, so the output
	// depends on the data alone.
	if _, err := zw.Write(data); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s: %d bytes (%d uncompressed), %d types, %d regions, %d priced (region, type) pairs, dated %s",
		*out, buf.Len(), len(data), len(cat.types), len(cat.zones), len(cat.prices), cat.date)
}

// module is what `go mod download -json` reports.
type module struct {
	Path, Version, Dir, Zip, Error string
	Time                           string
}

// date is the data date of a module version: the commit date of a
// pseudo-version, else the version's publication date.
func (m module) date() string {
	if p := strings.Split(m.Version, "-"); len(p) >= 3 && len(p[len(p)-2]) == 14 {
		if t, err := time.Parse("20060102150405", p[len(p)-2]); err == nil {
			return t.Format("2006-01-02")
		}
	}
	if t, err := time.Parse(time.RFC3339, m.Time); err == nil {
		return t.Format("2006-01-02")
	}
	return "unknown date"
}

// path names a file of the module in messages.
func (m module) path(rel string) string { return m.Path + "@" + m.Version + "/" + rel }

// read returns a file of the module, from the module's zip in the module
// cache: the zip is there even when the go command refuses to extract a
// module that needs a newer Go than this machine's (karpenter-provider-aws
// v1.15.2 wants go 1.26.11), and the generator only reads data files.
func (m module) read(rel string) []byte {
	zr, err := zip.OpenReader(m.Zip)
	if err != nil {
		log.Fatalf("%s: %v", m.Path, err)
	}
	defer zr.Close()
	f, err := zr.Open(m.Path + "@" + m.Version + "/" + rel)
	if err != nil && m.Path != m.realPath() {
		f, err = zr.Open(m.realPath() + "@" + m.Version + "/" + rel)
	}
	if err != nil {
		log.Fatalf("%s: %v", m.path(rel), err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		log.Fatalf("%s: %v", m.path(rel), err)
	}
	return b
}

// realPath is the path the module's zip is stored under: that of the
// replacement for a replaced module (the zip's file names carry it).
func (m module) realPath() string {
	if m.Path == ec2InfoModule {
		return "github.com/cristim/ec2-instances-info"
	}
	return m.Path
}

// toolchainErr matches the go command's refusal of a module that declares a
// newer Go; the module is downloaded all the same.
var toolchainErr = regexp.MustCompile(`requires go >= [0-9.]+ \(running go`)

// download fetches a module into the module cache and returns where it is. An
// empty version means the version in this module's go.mod (with its replace).
func download(path, version string) module {
	arg := path
	if version != "" {
		arg += "@" + version
	}
	cmd := exec.Command("go", "mod", "download", "-json", arg)
	// GOTOOLCHAIN=local: a module that declares a newer Go must not make
	// the go command fetch another toolchain; its zip is all the generator
	// needs (see module.read).
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	var m module
	jerr := json.Unmarshal(outb, &m)
	if m.Error != "" && toolchainErr.MatchString(m.Error) {
		m.Error, err = "", nil // go mod download exits 1 for it
	}
	if jerr != nil || err != nil || m.Error != "" || m.Zip == "" {
		log.Fatalf("go mod download %s: %v %v %s", arg, err, jerr, m.Error)
	}
	if m.Time == "" {
		// go mod download -json does not always report Time; the .info file has it.
		info := strings.TrimSuffix(m.Zip, ".zip") + ".info"
		if b, err := os.ReadFile(info); err == nil {
			var i struct{ Time string }
			if json.Unmarshal(b, &i) == nil {
				m.Time = i.Time
			}
		}
	}
	return m
}

// num is a number the data set writes either as a JSON number or as a string;
// anything unparseable ("N/A", null) decodes as 0.
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	*n = num(f)
	return nil
}

type rawInstance struct {
	InstanceType string  `json:"instance_type"`
	Generation   string  `json:"generation"`
	VCPU         num     `json:"vCPU"`
	Memory       num     `json:"memory"` // GiB
	GPU          num     `json:"GPU"`
	GPUModel     *string `json:"GPU_model"`
	GPUMemory    num     `json:"GPU_memory"` // GiB, all GPUs
	Processor    string  `json:"physical_processor"`
	EBSOptimized bool    `json:"ebs_optimized"`
	EBSMax       num     `json:"ebs_max_bandwidth"` // Mbps
	Storage      *struct {
		Devices int    `json:"devices"`
		NVMe    bool   `json:"nvme_ssd"`
		Size    num    `json:"size"`
		Unit    string `json:"size_unit"`
	} `json:"storage"`
	Arch []string `json:"arch"`
	VPC  *struct {
		IPsPerENI int `json:"ips_per_eni"`
		MaxENIs   int `json:"max_enis"`
	} `json:"vpc"`
	AZ      map[string][]string `json:"availability_zones"`
	Pricing map[string]struct {
		Linux *struct {
			OnDemand num   `json:"ondemand"`
			Spot     []num `json:"spot"`
			SpotAvg  num   `json:"spot_avg"`
		} `json:"linux"`
	} `json:"pricing"`
}

func readEC2Info(b []byte) []rawInstance {
	var insts []rawInstance
	if err := json.Unmarshal(b, &insts); err != nil {
		log.Fatalf("ec2-instances-info data/instances.json: %v", err)
	}
	return insts
}

// readKarpenterPrices parses the InitialOnDemandPrices* maps of the AWS and
// AWS GovCloud partitions (the China table is in CNY and is not used). It
// returns region → type → USD/hour and region → the date its table was
// generated at (each file says "generated at <time>").
func readKarpenterPrices(m module) (map[string]map[string]float64, map[string]string) {
	prices := map[string]map[string]float64{}
	dates := map[string]string{}
	dateRE := regexp.MustCompile(`generated at (\d{4}-\d{2}-\d{2})`)
	for _, f := range []string{"zz_generated.pricing_aws.go", "zz_generated.pricing_aws_us_gov.go"} {
		rel := "pkg/providers/pricing/" + f
		path := m.path(rel)
		src := m.read(rel)
		dm := dateRE.FindSubmatch(src)
		if dm == nil {
			log.Fatalf("%s: no \"generated at\" date", path)
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			log.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for _, v := range vs.Values {
				outer, ok := v.(*ast.CompositeLit)
				if !ok {
					continue
				}
				for _, e := range outer.Elts {
					kv := e.(*ast.KeyValueExpr)
					region := unquote(kv.Key)
					if prices[region] == nil {
						prices[region] = map[string]float64{}
					}
					dates[region] = string(dm[1])
					for _, e := range kv.Value.(*ast.CompositeLit).Elts {
						kv := e.(*ast.KeyValueExpr)
						lit := kv.Value.(*ast.BasicLit)
						f, err := strconv.ParseFloat(lit.Value, 64)
						if err != nil {
							log.Fatalf("%s: %v", path, err)
						}
						prices[region][unquote(kv.Key)] = f
					}
				}
			}
			return false
		})
	}
	return prices, dates
}

// readSDKInstanceTypes returns the values of the SDK's InstanceType enum
// (types/enums.go: const InstanceTypeXxx InstanceType = "x.y").
func readSDKInstanceTypes(path string, src []byte) []string {
	file, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "InstanceType" {
			return false
		}
		for _, v := range vs.Values {
			names = append(names, unquote(v))
		}
		return false
	})
	if len(names) < 500 {
		log.Fatalf("%s: %d InstanceType values, want hundreds", path, len(names))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

type vpcLimits struct{ enis, ipv4 int }

// readKarpenterVPCLimits parses the Limits map: type → Interface, IPv4PerInterface.
func readKarpenterVPCLimits(path string, src []byte) map[string]vpcLimits {
	file, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		log.Fatal(err)
	}
	limits := map[string]vpcLimits{}
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "Limits" {
			return true
		}
		for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			var l vpcLimits
			for _, f := range kv.Value.(*ast.CompositeLit).Elts {
				fkv := f.(*ast.KeyValueExpr)
				lit, ok := fkv.Value.(*ast.BasicLit)
				if !ok {
					continue
				}
				v, _ := strconv.Atoi(lit.Value)
				switch fkv.Key.(*ast.Ident).Name {
				case "Interface":
					l.enis = v
				case "IPv4PerInterface":
					l.ipv4 = v
				}
			}
			limits[unquote(kv.Key)] = l
		}
		return false
	})
	return limits
}

func unquote(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		log.Fatalf("expected a string literal, got %T", e)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		log.Fatal(err)
	}
	return s
}

type instType struct {
	name       string
	vcpu       int
	memMiB     int64
	arch       string
	enis, ipv4 int
	gpu        int
	gpuMfr     string
	gpuName    string
	gpuMemMiB  int64 // per GPU
	accelMfr   string
	accelName  string
	accelCount int
	neuronCore int
	cpuMfr     string
	netMbps    int64
	ebsMbps    int64
	nvmeGB     int64
}

type price struct {
	region, typ string
	od, spot    float64
	zones       string // zone suffixes, "" for all zones of the region
}

type catalog struct {
	source string
	date   string // of the newest data, YYYY-MM-DD
	// regionDates holds, per region, the dates of its on-demand and of its
	// spot prices (YYYY-MM-DD).
	regionDates map[string][2]string
	// raised lists the spot outliers raised (see raiseSpotOutliers).
	raised []string
	zones  map[string]string // region → zone suffixes, e.g. "abcdef"
	types  []instType
	prices []price
}

// build joins the sources. ec2-instances-info gives the shapes, zones,
// spot prices and on-demand prices of the types it knows (as of ec2Date);
// Karpenter's on-demand tables (kpPrices, dated per region in kpDates)
// replace its on-demand prices where they have one, being newer; types
// neither ec2-instances-info nor the Karpenter tables' regions had priced are
// added from the Karpenter tables with their shapes from fs, and left out
// (and counted) when fs has no shape for them. sdkNames, every type name
// the EC2 SDK knows, are only counted.
func build(insts []rawInstance, ec2Date string, kpPrices map[string]map[string]float64, kpDates map[string]string, kpLimits map[string]vpcLimits,
	kpBandwidth map[string]int64, fs factsSet, sdkNames []string) *catalog {
	c := &catalog{zones: map[string]string{}, regionDates: map[string][2]string{}}
	sort.Slice(insts, func(i, j int) bool { return insts[i].InstanceType < insts[j].InstanceType })

	// Zones: the union of the zone IDs listed for any type in a region, sorted
	// and named a, b, c, … in that order (AWS maps zone IDs to zone names per
	// account, so the names are a stand-in).
	zoneIDs := map[string][]string{}
	for _, in := range insts {
		for r, ids := range in.AZ {
			zoneIDs[r] = append(zoneIDs[r], ids...)
		}
	}
	zoneLetter := map[string]byte{} // zone ID → letter
	for r, ids := range zoneIDs {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		var s []byte
		for i, id := range ids {
			zoneLetter[id] = byte('a' + i)
			s = append(s, byte('a'+i))
		}
		c.zones[r] = string(s)
	}

	var skippedPrev, skippedMac, skippedShape, filledENI, eniDiff, kpFilled, kpDiff, noPrice, spotAboveOD int
	var kpDiffs, shapeDiffs []string
	inSource := map[string]bool{}
	for _, in := range insts {
		inSource[in.InstanceType] = true
	}
	for _, in := range insts {
		name := in.InstanceType
		if in.Generation == "previous" {
			skippedPrev++
			continue
		}
		t := instType{name: name, vcpu: int(in.VCPU), memMiB: int64(math.Round(float64(in.Memory) * 1024))}
		switch {
		case slices.Contains(in.Arch, "x86_64"):
			t.arch = "amd64"
		case slices.Contains(in.Arch, "arm64"):
			t.arch = "arm64"
		default: // x86_64_mac, arm64_mac: Mac dedicated hosts, never Kubernetes nodes
			skippedMac++
			continue
		}
		if t.vcpu <= 0 || t.memMiB <= 0 {
			skippedShape++
			log.Printf("skipping %s: no vCPU or memory in the data", name)
			continue
		}
		if in.VPC != nil {
			t.enis, t.ipv4 = in.VPC.MaxENIs, in.VPC.IPsPerENI
		}
		if l, ok := kpLimits[name]; ok {
			if t.enis == 0 {
				t.enis, t.ipv4 = l.enis, l.ipv4
				filledENI++
			} else if t.enis != l.enis || t.ipv4 != l.ipv4 {
				eniDiff++
			}
		}
		t.gpu, t.gpuMfr, t.gpuName = gpu(in)
		if f, ok := fs.types[name]; ok && (f.vcpu != t.vcpu || f.memMiB != t.memMiB || f.arch != t.arch || f.gpu != t.gpu || f.gpuName != t.gpuName) {
			shapeDiffs = append(shapeDiffs, fmt.Sprintf("%s %d/%d/%s/%d%s→%d/%d/%s/%d%s", name, t.vcpu, t.memMiB, t.arch, t.gpu, t.gpuName, f.vcpu, f.memMiB, f.arch, f.gpu, f.gpuName))
		}
		if t.gpu > 0 && in.GPUMemory > 0 {
			t.gpuMemMiB = int64(math.Round(float64(in.GPUMemory) * 1024 / float64(t.gpu)))
		}
		t.accelMfr, t.accelName, t.accelCount, t.neuronCore = neuron(in)
		t.cpuMfr = cpuManufacturer(in.Processor)
		t.netMbps = kpBandwidth[name]
		if in.EBSOptimized && in.EBSMax > 0 {
			t.ebsMbps = int64(in.EBSMax)
		}
		if st := in.Storage; st != nil && st.NVMe && st.Devices > 0 && st.Size > 0 {
			gb := int64(st.Devices) * int64(st.Size)
			if st.Unit == "TB" {
				gb *= 1000
			}
			t.nvmeGB = gb
		}

		var typePrices []price
		regions := make([]string, 0, len(in.Pricing))
		for r := range in.Pricing {
			regions = append(regions, r)
		}
		for r := range kpPrices {
			if _, ok := in.Pricing[r]; !ok {
				regions = append(regions, r)
			}
		}
		slices.Sort(regions)
		for _, r := range regions {
			if !regionRE.MatchString(r) {
				continue
			}
			p := price{region: r, typ: name}
			if lin := in.Pricing[r].Linux; lin != nil {
				p.od = float64(lin.OnDemand)
				var spots []float64
				for _, s := range lin.Spot {
					if s > 0 {
						spots = append(spots, float64(s))
					}
				}
				if len(spots) > 0 {
					p.spot = median(spots)
				} else if lin.SpotAvg > 0 {
					p.spot = float64(lin.SpotAvg)
				}
			}
			// Karpenter's table is newer than ec2-instances-info: its
			// on-demand price wins. The spot price is a market price and is
			// kept.
			if kp, ok := kpPrices[r][name]; ok && kp > 0 {
				switch {
				case p.od <= 0:
					kpFilled++
				case math.Abs(kp-p.od)/p.od > 0.005:
					kpDiff++
					kpDiffs = append(kpDiffs, fmt.Sprintf("%s/%s %g→%g", r, name, p.od, kp))
				}
				p.od = kp
				if p.spot >= p.od {
					spotAboveOD++
				}
			}
			if p.od <= 0 && p.spot <= 0 {
				continue
			}
			if ids, ok := in.AZ[r]; ok && len(ids) > 0 {
				var s []byte
				for _, id := range ids {
					s = append(s, zoneLetter[id])
				}
				slices.Sort(s)
				s = slices.Compact(s)
				if string(s) != c.zones[r] {
					p.zones = string(s)
				}
			}
			p.od, p.spot = round(p.od), round(p.spot)
			typePrices = append(typePrices, p)
		}
		if len(typePrices) == 0 {
			noPrice++
			continue
		}
		for _, p := range typePrices {
			if _, ok := c.zones[p.region]; !ok {
				c.zones[p.region] = defaultZones
			}
		}
		c.types = append(c.types, t)
		c.prices = append(c.prices, typePrices...)
	}
	sort.Slice(c.prices, func(i, j int) bool {
		a, b := c.prices[i], c.prices[j]
		if a.region != b.region {
			return a.region < b.region
		}
		return a.typ < b.typ
	})

	c.raised = raiseSpotOutliers(c.prices)
	log.Printf("spot outliers: %d of %d spot prices below half their family's median spot/on-demand ratio in the region, raised to that median (all with -outliers FILE): %s",
		len(c.raised), countSpot(c.prices), abbreviate(c.raised, 12))

	log.Printf("skipped: %d previous-generation, %d Mac, %d without shape, %d without any Linux price", skippedPrev, skippedMac, skippedShape, noPrice)
	log.Printf("karpenter %s: filled %d on-demand prices, replaced %d that differ by > 0.5%% (%d of them now at or below their spot price); filled ENI limits of %d types, %d differ (ec2-instances-info kept)",
		karpenterVersion, kpFilled, kpDiff, spotAboveOD, filledENI, eniDiff)
	log.Printf("karpenter price differences (ec2-instances-info → karpenter): %s", abbreviate(kpDiffs, 8))
	log.Printf("shapes: %d types of ec2-instances-info have another vCPU/MiB/arch/GPU in %s (ec2-instances-info kept): %s", len(shapeDiffs), factsFile, abbreviate(shapeDiffs, 8))
	c.addNewTypes(inSource, kpPrices, kpLimits, kpBandwidth, fs, sdkNames)
	sort.Slice(c.types, func(i, j int) bool { return c.types[i].name < c.types[j].name })
	sort.Slice(c.prices, func(i, j int) bool {
		a, b := c.prices[i], c.prices[j]
		if a.region != b.region {
			return a.region < b.region
		}
		return a.typ < b.typ
	})
	for r := range c.zones {
		od := ec2Date
		if d, ok := kpDates[r]; ok {
			od = d
		}
		c.regionDates[r] = [2]string{od, ec2Date}
	}
	return c
}

// addNewTypes adds the types ec2-instances-info does not know (inSource)
// that a Karpenter on-demand table prices and fs gives the shape of: with
// ENI limits from Karpenter's VPC limits, network bandwidth from its
// bandwidth table (else fs's), offered on demand in every zone of each
// region the table prices them in, without spot prices (no source here has
// spot prices newer than ec2-instances-info). It logs what it leaves out:
// Mac hosts, types without a shape, and the names the SDK knows that no
// source prices.
func (c *catalog) addNewTypes(inSource map[string]bool, kpPrices map[string]map[string]float64, kpLimits map[string]vpcLimits,
	kpBandwidth map[string]int64, fs factsSet, sdkNames []string) {
	isMac := func(n string) bool { return strings.HasPrefix(n, "mac") }
	priced := map[string]bool{}
	for r, ps := range kpPrices {
		if !regionRE.MatchString(r) {
			continue
		}
		for n, p := range ps {
			if p > 0 && !inSource[n] {
				priced[n] = true
			}
		}
	}
	var added, mac, noShape, noENI []string
	families := map[string]bool{}
	for _, n := range slices.Sorted(maps.Keys(priced)) {
		f, ok := fs.types[n]
		switch {
		case isMac(n):
			mac = append(mac, n)
			continue
		case !ok:
			noShape = append(noShape, n)
			continue
		}
		t := f
		if l, ok := kpLimits[n]; ok {
			t.enis, t.ipv4 = l.enis, l.ipv4
		} else {
			noENI = append(noENI, n)
		}
		if bw, ok := kpBandwidth[n]; ok {
			t.netMbps = bw
		}
		for _, r := range slices.Sorted(maps.Keys(kpPrices)) {
			if p := kpPrices[r][n]; p > 0 && regionRE.MatchString(r) {
				c.prices = append(c.prices, price{region: r, typ: n, od: round(p)})
				if _, ok := c.zones[r]; !ok {
					c.zones[r] = defaultZones
				}
			}
		}
		c.types = append(c.types, t)
		added = append(added, n)
		fam, _, _ := strings.Cut(n, ".")
		families[fam] = true
	}
	log.Printf("new types: added %d in %d families (%s) with shapes from %s and on-demand prices from %s %s; %d of them without ENI limits",
		len(added), len(families), strings.Join(slices.Sorted(maps.Keys(families)), " "), factsFile, karpenterModule, karpenterVersion, len(noENI))
	log.Printf("new types left out: %d Mac hosts (%s), %d without a shape in any source (%s)", len(mac), abbreviate(mac, 8), len(noShape), abbreviate(noShape, 12))
	var unpriced, unknown []string
	for _, n := range sdkNames {
		if inSource[n] || priced[n] || isMac(n) {
			continue
		}
		if _, ok := fs.types[n]; ok {
			unpriced = append(unpriced, n)
		} else {
			unknown = append(unknown, n)
		}
	}
	log.Printf("%s %s names %d more types that no source prices: %d with a shape in %s (%s), %d without any shape (%s)",
		sdkModule, sdkVersion, len(unpriced)+len(unknown), len(unpriced), factsFile, abbreviate(unpriced, 8), len(unknown), abbreviate(unknown, 12))
}

// outlierFactor: a spot price whose spot/on-demand ratio is below
// outlierFactor × its family's median ratio in the region is an outlier.
const outlierFactor = 0.5

// minFamilyPrices is the number of priced types a family needs in a region
// for its median ratio to say what is normal for it.
const minFamilyPrices = 3

// raiseSpotOutliers raises every spot price far below what the rest of its
// family costs in spot in that region (spot/on-demand ratio below
// outlierFactor × the family's median ratio) to the family's median ratio
// of its on-demand price. The source's spot prices are zone quotes of one
// moment: r6in.large at 13 % of on-demand in every zone of us-east-1 while
// r6in.xlarge is at 42 % and r6in.2xlarge at 46 % is a thin capacity pool a
// fleet would drain, not a price to plan fleets with. A family whose every
// size is cheap (m8gd at 11 % in us-east-1, in all sizes and zones; the
// Spot Advisor agrees) is left alone: that is its price. It returns one
// "region/type old→new (ratio→median)" entry per price raised.
func raiseSpotOutliers(prices []price) []string {
	family := func(t string) string { f, _, _ := strings.Cut(t, "."); return f }
	ratios := map[[2]string][]float64{}
	for _, p := range prices {
		if p.od > 0 && p.spot > 0 {
			k := [2]string{p.region, family(p.typ)}
			ratios[k] = append(ratios[k], p.spot/p.od)
		}
	}
	medians := map[[2]string]float64{}
	for k, r := range ratios {
		if len(r) >= minFamilyPrices {
			medians[k] = median(r)
		}
	}
	var raised []string
	for i := range prices {
		p := &prices[i]
		m, ok := medians[[2]string{p.region, family(p.typ)}]
		if !ok || p.od <= 0 || p.spot <= 0 || p.spot/p.od >= outlierFactor*m {
			continue
		}
		old := p.spot
		p.spot = round(p.od * m)
		raised = append(raised, fmt.Sprintf("%s/%s %g→%g (%.0f%%→%.0f%%)", p.region, p.typ, old, p.spot, 100*old/p.od, 100*m))
	}
	return raised
}

func countSpot(prices []price) int {
	n := 0
	for _, p := range prices {
		if p.spot > 0 {
			n++
		}
	}
	return n
}

func abbreviate(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, " ")
	}
	return strings.Join(s[:n], " ") + " …"
}

// gpu returns the GPU count, manufacturer and lower-case model of a type.
// Inferentia and Trainium accelerators are not GPUs (Kubernetes schedules them
// as aws.amazon.com/neuron) and count as none.
func gpu(in rawInstance) (int, string, string) {
	if in.GPU <= 0 || in.GPUModel == nil {
		return 0, "", ""
	}
	model := *in.GPUModel
	var mfr string
	switch {
	case strings.HasPrefix(model, "NVIDIA "):
		mfr, model = "nvidia", strings.TrimPrefix(model, "NVIDIA ")
	case strings.HasPrefix(model, "AMD "):
		mfr, model = "amd", strings.TrimPrefix(model, "AMD ")
	default:
		return 0, "", ""
	}
	for _, w := range []string{"Tesla ", "GRID ", " Tensor Core"} {
		model = strings.ReplaceAll(model, w, "")
	}
	model = strings.ToLower(strings.Join(strings.Fields(model), "-"))
	return int(in.GPU), mfr, model
}

// neuron returns the AWS Neuron accelerator of an Inferentia or Trainium
// type as Karpenter's AWS provider labels it (lower-case device name,
// manufacturer "aws", device count) and its NeuronCores, devices × cores
// per device. The source gives the device count in its GPU column and
// names every Trainium "AWS Inferentia", so the device comes from the
// family; cores per device are AWS's (Inferentia 4, Inferentia2 and
// Trainium 2, Trainium2 8), matching the NeuronInfo of inf2 and trn1 in
// Karpenter's test data (pkg/fake/zz_generated.describe_instance_types.go).
func neuron(in rawInstance) (mfr, name string, count, cores int) {
	if in.GPU <= 0 {
		return "", "", 0, 0
	}
	family, _, _ := strings.Cut(in.InstanceType, ".")
	perDevice := 0
	switch family {
	case "inf1":
		name, perDevice = "inferentia", 4
	case "inf2":
		name, perDevice = "inferentia2", 2
	case "trn1", "trn1n":
		name, perDevice = "trainium", 2
	case "trn2", "trn2u":
		name, perDevice = "trainium2", 8
	default:
		return "", "", 0, 0
	}
	return "aws", name, int(in.GPU), int(in.GPU) * perDevice
}

// cpuManufacturer maps the source's processor name to Karpenter's
// karpenter.k8s.aws/instance-cpu-manufacturer values: aws, intel, amd.
func cpuManufacturer(processor string) string {
	switch p := strings.ToLower(processor); {
	case strings.Contains(p, "graviton") || strings.HasPrefix(p, "aws "):
		return "aws"
	case strings.Contains(p, "intel"):
		return "intel"
	case strings.Contains(p, "amd"):
		return "amd"
	}
	return ""
}

// num0 formats n, or "" for zero (the catalog's "none").
func num0(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// readKarpenterBandwidth parses InstanceTypeBandwidthMegabits: type → Mbps.
func readKarpenterBandwidth(path string, src []byte) map[string]int64 {
	file, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		log.Fatal(err)
	}
	out := map[string]int64{}
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "InstanceTypeBandwidthMegabits" {
			return true
		}
		for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			lit, ok := kv.Value.(*ast.BasicLit)
			if !ok {
				continue
			}
			v, err := strconv.ParseInt(lit.Value, 10, 64)
			if err != nil {
				log.Fatalf("%s: bandwidth %s: %v", path, lit.Value, err)
			}
			out[unquote(kv.Key)] = v
		}
		return false
	})
	if len(out) == 0 {
		log.Fatalf("%s: no InstanceTypeBandwidthMegabits", path)
	}
	return out
}

func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// round rounds to sigDigits significant digits.
func round(f float64) float64 {
	if f <= 0 {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', sigDigits, 64), 64)
	return r
}

func fmtPrice(f float64) string {
	if f <= 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func (c *catalog) encode() []byte {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	fmt.Fprintln(w, "# kubectl-rightsize AWS instance-type catalog v3; generated by hack/gencatalog, do not edit")
	fmt.Fprintf(w, "S\t%s\n", c.source)
	fmt.Fprintf(w, "D\t%s\n", c.date)
	regions := make([]string, 0, len(c.zones))
	for r := range c.zones {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	for _, r := range regions {
		fmt.Fprintf(w, "Z\t%s\t%s\n", r, c.zones[r])
	}
	for _, t := range c.types {
		fmt.Fprintf(w, "T\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.name, t.vcpu, t.memMiB, t.arch, t.enis, t.ipv4, t.gpu, t.gpuMfr, t.gpuName,
			num0(t.gpuMemMiB), t.accelMfr, t.accelName, num0(int64(t.accelCount)), num0(int64(t.neuronCore)), t.cpuMfr, num0(t.netMbps), num0(t.ebsMbps), num0(t.nvmeGB))
	}
	region := ""
	for _, p := range c.prices {
		if p.region != region {
			region = p.region
			d := c.regionDates[region]
			fmt.Fprintf(w, "R\t%s\t%s\t%s\n", region, d[0], d[1])
		}
		fmt.Fprintf(w, "P\t%s\t%s\t%s\t%s\n", p.typ, fmtPrice(p.od), fmtPrice(p.spot), p.zones)
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}
