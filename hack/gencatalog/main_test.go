package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const docSnippet = `---
title: "Instance Types"
---
## c8i Family
### ` + "`c8i.large`" + `
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-cpu|2|
 |karpenter.k8s.aws/instance-cpu-manufacturer|intel|
 |karpenter.k8s.aws/instance-ebs-bandwidth|10000|
 |karpenter.k8s.aws/instance-memory|4096|
 |karpenter.k8s.aws/instance-network-bandwidth|937|
 |kubernetes.io/arch|amd64|
#### Resources
 | Resource | Quantity |
 |--|--|
 |cpu|1930m|
 |memory|3114Mi|
## g7e Family
### ` + "`g7e.2xlarge`" + `
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-cpu|8|
 |karpenter.k8s.aws/instance-gpu-count|1|
 |karpenter.k8s.aws/instance-gpu-manufacturer|nvidia|
 |karpenter.k8s.aws/instance-gpu-memory|98304|
 |karpenter.k8s.aws/instance-gpu-name|rtx-pro-server-6000|
 |karpenter.k8s.aws/instance-local-nvme|1900|
 |karpenter.k8s.aws/instance-memory|65536|
 |kubernetes.io/arch|amd64|
#### Resources
 | Resource | Quantity |
 |--|--|
 |nvidia.com/gpu|1|
### ` + "`dl2q.24xlarge`" + `
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-cpu|96|
 |karpenter.k8s.aws/instance-gpu-count|8|
 |karpenter.k8s.aws/instance-gpu-manufacturer|qualcomm|
 |karpenter.k8s.aws/instance-gpu-name|qualcomm-ai100|
 |karpenter.k8s.aws/instance-memory|786432|
 |kubernetes.io/arch|amd64|
### ` + "`trn2.48xlarge`" + `
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-accelerator-count|16|
 |karpenter.k8s.aws/instance-accelerator-manufacturer|aws|
 |karpenter.k8s.aws/instance-accelerator-name|trainium2|
 |karpenter.k8s.aws/instance-cpu|192|
 |karpenter.k8s.aws/instance-memory|2097152|
 |kubernetes.io/arch|amd64|
#### Resources
 | Resource | Quantity |
 |--|--|
 |aws.amazon.com/neuron|16|
 |aws.amazon.com/neuroncore|128|
`

// quiet silences the generator's log for a test.
func quiet(t *testing.T) {
	t.Helper()
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
}

func TestReadKarpenterDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "instance-types.md")
	if err := os.WriteFile(path, []byte(docSnippet), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readKarpenterDoc(path)
	want := map[string]instType{
		"c8i.large": {name: "c8i.large", vcpu: 2, memMiB: 4096, arch: "amd64", cpuMfr: "intel", netMbps: 937, ebsMbps: 10000},
		"g7e.2xlarge": {name: "g7e.2xlarge", vcpu: 8, memMiB: 65536, arch: "amd64", gpu: 1, gpuMfr: "nvidia",
			gpuName: "rtx-pro-server-6000", gpuMemMiB: 98304, nvmeGB: 1900},
		// Qualcomm's AI 100 is not schedulable as a GPU: none, as for ec2-instances-info's types.
		"dl2q.24xlarge": {name: "dl2q.24xlarge", vcpu: 96, memMiB: 786432, arch: "amd64"},
		"trn2.48xlarge": {name: "trn2.48xlarge", vcpu: 192, memMiB: 2097152, arch: "amd64",
			accelMfr: "aws", accelName: "trainium2", accelCount: 16, neuronCore: 128},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readKarpenterDoc:\n got %+v\nwant %+v", got, want)
	}
}

func TestFactsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "instance-types.md")
	if err := os.WriteFile(doc, []byte(docSnippet), 0o644); err != nil {
		t.Fatal(err)
	}
	types := readKarpenterDoc(doc)
	path := filepath.Join(dir, factsFile)
	writeFacts(path, types, "somewhere at commit abc", "2026-07-11")
	first, _ := os.ReadFile(path)
	fs := readFacts(path)
	if fs.provenance != "somewhere at commit abc" || fs.date != "2026-07-11" || !reflect.DeepEqual(fs.types, types) {
		t.Errorf("readFacts = %+v, want the types written, provenance and date", fs)
	}
	writeFacts(path, fs.types, fs.provenance, fs.date)
	if again, _ := os.ReadFile(path); !bytes.Equal(first, again) {
		t.Error("writing the facts read back gives other bytes")
	}
}

// TestCommittedFacts checks the committed extract: readable, and with the
// types the catalog's tests rely on.
func TestCommittedFacts(t *testing.T) {
	fs := readFacts(factsFile)
	if len(fs.types) < 1300 || fs.date != "2026-07-11" || !strings.Contains(fs.provenance, "692ccdd0629e488300821443f0fa0bc3c3e08047") {
		t.Errorf("%s: %d types, date %q, provenance %q", factsFile, len(fs.types), fs.date, fs.provenance)
	}
	if got := fs.types["m9g.large"]; got.vcpu != 2 || got.memMiB != 8192 || got.arch != "arm64" {
		t.Errorf("m9g.large = %+v", got)
	}
}

func rawInst(t *testing.T, js string) rawInstance {
	t.Helper()
	var in rawInstance
	if err := json.Unmarshal([]byte(js), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestBuildJoinsTheSources checks which source wins where: Karpenter's
// on-demand price over ec2-instances-info's in the regions it prices (spot
// kept), new types added from the facts with on-demand prices only where a
// Karpenter table prices them, types without a shape and Mac hosts left
// out, and the price dates per region.
func TestBuildJoinsTheSources(t *testing.T) {
	quiet(t)
	insts := []rawInstance{rawInst(t, `{"instance_type": "m5.large", "generation": "current", "vCPU": 2, "memory": 8,
		"arch": ["x86_64"], "vpc": {"ips_per_eni": 10, "max_enis": 3},
		"pricing": {"us-east-1": {"linux": {"ondemand": "0.096", "spot": ["0.04", "0.05", "0.06"]}},
		            "eu-west-1": {"linux": {"ondemand": "0.107", "spot_avg": "0.03"}}}}`)}
	kpPrices := map[string]map[string]float64{"us-east-1": {
		"m5.large":     0.1,     // newer: replaces 0.096
		"c8i.large":    0.09371, // new, with a shape
		"zz9.large":    1,       // new, no shape anywhere: left out
		"mac-m4.metal": 1.2,     // Mac host: left out
	}}
	kpDates := map[string]string{"us-east-1": "2026-07-20"}
	kpLimits := map[string]vpcLimits{"c8i.large": {enis: 3, ipv4: 20}}
	fs := factsSet{date: "2026-07-11", provenance: "test", types: map[string]instType{
		"c8i.large": {name: "c8i.large", vcpu: 2, memMiB: 4096, arch: "amd64", cpuMfr: "intel", netMbps: 1},
		"m5.large":  {name: "m5.large", vcpu: 2, memMiB: 8192, arch: "amd64"},
	}}
	c := build(insts, "2025-05-28", kpPrices, kpDates, kpLimits, map[string]int64{"c8i.large": 937}, fs, []string{"c8i.large", "m5.large", "zz9.large"})

	var names []string
	for _, ty := range c.types {
		names = append(names, ty.name)
	}
	if want := []string{"c8i.large", "m5.large"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("types %v, want %v", names, want)
	}
	if got, want := c.types[0], (instType{name: "c8i.large", vcpu: 2, memMiB: 4096, arch: "amd64", cpuMfr: "intel", enis: 3, ipv4: 20, netMbps: 937}); got != want {
		t.Errorf("c8i.large = %+v, want %+v (ENIs from the VPC limits, bandwidth from Karpenter's table)", got, want)
	}
	wantPrices := []price{
		{region: "eu-west-1", typ: "m5.large", od: 0.107, spot: 0.03},
		{region: "us-east-1", typ: "c8i.large", od: 0.09371},
		{region: "us-east-1", typ: "m5.large", od: 0.1, spot: 0.05},
	}
	if !reflect.DeepEqual(c.prices, wantPrices) {
		t.Errorf("prices\n got %+v\nwant %+v", c.prices, wantPrices)
	}
	wantDates := map[string][2]string{"us-east-1": {"2026-07-20", "2025-05-28"}, "eu-west-1": {"2025-05-28", "2025-05-28"}}
	if !reflect.DeepEqual(c.regionDates, wantDates) {
		t.Errorf("regionDates = %v, want %v", c.regionDates, wantDates)
	}

	// Deterministic: the same inputs, the same bytes.
	c.source, c.date = "src", "2026-07-20"
	again := build(insts, "2025-05-28", kpPrices, kpDates, kpLimits, map[string]int64{"c8i.large": 937}, fs, nil)
	again.source, again.date = "src", "2026-07-20"
	first := c.encode()
	if !bytes.Equal(first, again.encode()) {
		t.Error("two builds of the same inputs encode differently")
	}
	for _, want := range []string{"R\tus-east-1\t2026-07-20\t2025-05-28\n", "P\tc8i.large\t0.09371\t\t\n", "D\t2026-07-20\n"} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("encoding lacks %q:\n%s", want, first)
		}
	}
}

func TestReadSDKInstanceTypes(t *testing.T) {
	src := []byte(`package types
type InstanceType string
const (
	InstanceTypeT1Micro InstanceType = "t1.micro"
	InstanceTypeC8iLarge InstanceType = "c8i.large"
)
type Other string
const (
	OtherX Other = "not.a-type"
)
`)
	// readSDKInstanceTypes wants hundreds of names: pad with a generated list.
	var b strings.Builder
	b.Write(src)
	b.WriteString("const (\n")
	for i := range 600 {
		b.WriteString("\tInstanceTypeX" + strings.Repeat("a", i%3+1) + strconv.Itoa(i) + " InstanceType = \"x" + strconv.Itoa(i) + ".large\"\n")
	}
	b.WriteString(")\n")
	names := readSDKInstanceTypes("enums.go", []byte(b.String()))
	if len(names) != 602 || names[0] != "c8i.large" || slices.Contains(names, "not.a-type") {
		t.Errorf("readSDKInstanceTypes: %d names, first %q", len(names), names[0])
	}
}
