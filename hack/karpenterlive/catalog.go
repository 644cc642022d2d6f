package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kwokcloud "sigs.k8s.io/karpenter/kwok/cloudprovider"
	kwokoptions "sigs.k8s.io/karpenter/kwok/options"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
)

// The shared catalog: a documented subset of our embedded AWS catalog
// (region benchRegion) that both systems are given, so that neither can
// win by knowing a type or a price the other does not.
//
//   - general purpose, compute and memory families, Intel (c6i, m6i, r6i)
//     and Graviton (c7g, m7g, r7g), sizes large to 16xlarge: amd64 and arm64;
//   - g5 (one to eight NVIDIA A10G GPUs), xlarge to 48xlarge, for the GPU
//     pool;
//   - three zones, on-demand and spot, at the catalog's prices (its date is
//     in the report).
//
// Each type's overhead (what pods may not request) is Karpenter's kwok
// provider's fixed kube-reserved, 100m CPU and 10Mi memory, and no
// eviction threshold, written into our file as the type's overhead: both
// systems then see the same allocatable. Pods per node: 110 for both.
const benchRegion = "us-east-1"

var (
	// benchZones are three zones where the catalog offers every kept type
	// (us-east-1c offers few types: a pool allowing it would make it a
	// topology-spread domain that Karpenter cannot launch into).
	benchZones    = []string{"us-east-1a", "us-east-1b", "us-east-1d"}
	benchFamilies = []string{"c6i", "m6i", "r6i", "c7g", "m7g", "r7g", "g5"}
	benchSizes    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}
	// kwokOverhead is Karpenter's kwok provider's kube-reserved
	// (kwok/cloudprovider/helpers.go, newInstanceType).
	kwokOverheadCPU    = resource.MustParse("100m")
	kwokOverheadMemory = resource.MustParse("10Mi")
)

// gpuFamily reports whether a type belongs to the GPU pool.
func gpuFamily(name string) bool { return strings.HasPrefix(name, "g5.") }

// sharedCatalog is the subset both systems launch from.
type sharedCatalog struct {
	Types []cloud.InstanceType
	// Source and Date describe the embedded catalog the prices come from.
	Source, Date string
	price        map[offeringKey]float64
}

// offeringKey names one offering: type, zone, capacity type.
type offeringKey struct{ Type, Zone, CapacityType string }

// newSharedCatalog picks the subset from the embedded catalog.
func newSharedCatalog() (*sharedCatalog, error) {
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the embedded catalog: %w", err)
	}
	all, err := cat.InstanceTypes(benchRegion)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, f := range benchFamilies {
		for _, s := range benchSizes {
			want[f+"."+s] = true
		}
	}
	sc := &sharedCatalog{Source: cat.Source(), Date: cat.Date(), price: map[offeringKey]float64{}}
	for _, it := range all {
		if !want[it.Name] {
			continue
		}
		var offs []cloud.Offering
		for _, o := range it.Offerings {
			if slices.Contains(benchZones, o.Zone) && (o.CapacityType == cloud.CapacityTypeOnDemand || o.CapacityType == cloud.CapacityTypeSpot) {
				offs = append(offs, cloud.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
			}
		}
		// Only types offered on-demand and spot in every bench zone: both
		// systems then see the same zones for every type.
		if len(offs) != 2*len(benchZones) {
			continue
		}
		it.Offerings = offs
		it.Overhead = &cloud.Overhead{CPU: kwokOverheadCPU.MilliValue(), Memory: kwokOverheadMemory.Value()}
		it.Pods = 110
		sc.Types = append(sc.Types, it)
		for _, o := range offs {
			sc.price[offeringKey{it.Name, o.Zone, o.CapacityType}] = o.Price
		}
	}
	sort.Slice(sc.Types, func(i, j int) bool { return sc.Types[i].Name < sc.Types[j].Name })
	arches := map[string]bool{}
	gpus := 0
	for _, it := range sc.Types {
		arches[it.Architecture] = true
		if it.GPU > 0 {
			gpus++
		}
	}
	if len(sc.Types) < 20 || !arches["amd64"] || !arches["arm64"] || gpus == 0 {
		return nil, fmt.Errorf("the embedded catalog's %s gives only %d of the bench's types (arches %v, %d GPU types)", benchRegion, len(sc.Types), arches, gpus)
	}
	return sc, nil
}

// Price is the hourly price of an offering, and whether the catalog has it.
func (sc *sharedCatalog) Price(typ, zone, capacityType string) (float64, bool) {
	p, ok := sc.price[offeringKey{typ, zone, capacityType}]
	return p, ok
}

// names returns the type names, GPU ones or not.
func (sc *sharedCatalog) names(gpu bool) []string {
	var out []string
	for _, it := range sc.Types {
		if gpuFamily(it.Name) == gpu {
			out = append(out, it.Name)
		}
	}
	return out
}

// ourFile is our --instance-types file format (pkg/cloud/file.go).
type ourFile struct {
	InstanceTypes []ourType `json:"instanceTypes"`
}

type ourType struct {
	Name            string `json:"name"`
	CPU             string `json:"cpu"`
	Memory          string `json:"memory"`
	Pods            int64  `json:"pods"`
	GPU             int64  `json:"gpu,omitempty"`
	GPUName         string `json:"gpuName,omitempty"`
	GPUManufacturer string `json:"gpuManufacturer,omitempty"`
	Architecture    string `json:"architecture"`
	Overhead        struct {
		CPU    string `json:"cpu"`
		Memory string `json:"memory"`
	} `json:"overhead"`
	Offerings []ourOffering `json:"offerings"`
}

type ourOffering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
}

// kwokType is one entry of Karpenter's kwok instance-types JSON
// (kwok/cloudprovider/helpers.go InstanceTypeOptions; offerings as
// KWOKOffering marshals: Price, Available, Requirements).
type kwokType struct {
	Name             string              `json:"name"`
	Offerings        []kwokOffering      `json:"offerings"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []string            `json:"operatingSystems"`
	Resources        corev1.ResourceList `json:"resources"`
}

type kwokOffering struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// writeFiles writes our instance-types file and Karpenter's kwok JSON into
// dir and returns their paths.
func (sc *sharedCatalog) writeFiles(dir string) (ours, karpenter string, err error) {
	var of ourFile
	var kf []kwokType
	for _, it := range sc.Types {
		cpu := resource.NewMilliQuantity(it.CPU, resource.DecimalSI).String()
		mem := resource.NewQuantity(it.Memory, resource.BinarySI).String()
		ot := ourType{Name: it.Name, CPU: cpu, Memory: mem, Pods: it.Pods, GPU: it.GPU, GPUName: it.GPUName,
			GPUManufacturer: it.GPUManufacturer, Architecture: it.Architecture}
		ot.Overhead.CPU, ot.Overhead.Memory = kwokOverheadCPU.String(), kwokOverheadMemory.String()
		kt := kwokType{Name: it.Name, Architecture: it.Architecture, OperatingSystems: []string{"linux"},
			Resources: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse(mem),
				corev1.ResourcePods:   *resource.NewQuantity(it.Pods, resource.DecimalSI),
			}}
		if it.GPU > 0 {
			kt.Resources[cloud.ResourceNVIDIAGPU] = *resource.NewQuantity(it.GPU, resource.DecimalSI)
		}
		for _, o := range it.Offerings {
			ot.Offerings = append(ot.Offerings, ourOffering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
			kt.Offerings = append(kt.Offerings, kwokOffering{Price: o.Price, Available: true, Requirements: []corev1.NodeSelectorRequirement{
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{o.CapacityType}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{o.Zone}},
			}})
		}
		of.InstanceTypes = append(of.InstanceTypes, ot)
		kf = append(kf, kt)
	}
	ours, karpenter = filepath.Join(dir, "instance-types.yaml"), filepath.Join(dir, "kwok-instance-types.json")
	ob, err := yaml.Marshal(of)
	if err != nil {
		return "", "", err
	}
	kb, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(ours, ob, 0o644); err != nil {
		return "", "", fmt.Errorf("writing our instance types: %w", err)
	}
	if err := os.WriteFile(karpenter, kb, 0o644); err != nil {
		return "", "", fmt.Errorf("writing Karpenter's instance types: %w", err)
	}
	return ours, karpenter, nil
}

// typeView is what a system reads from its file: per type the offerings
// (zone/capacity type -> price), architecture, capacity and allocatable.
type typeView struct {
	Arch               string
	CPU, Memory, GPU   int64 // millicores, bytes, GPUs
	AllocCPU, AllocMem int64
	Pods               int64
	Offerings          map[string]float64 // "zone/capacity-type" -> $/h
}

// checkFiles reads both files back the way each system reads them — ours
// with pkg/cloud's ReadInstanceTypes, Karpenter's with its kwok provider's
// ConstructInstanceTypes — and reports the first difference in types,
// zones, capacity types, prices, capacity or allocatable.
func checkFiles(ours, karpenter string) (int, error) {
	ob, err := os.ReadFile(ours)
	if err != nil {
		return 0, err
	}
	otypes, err := cloud.ReadInstanceTypes(ours, ob)
	if err != nil {
		return 0, fmt.Errorf("our reader: %w", err)
	}
	ov := map[string]typeView{}
	for _, it := range otypes {
		v := typeView{Arch: it.Architecture, CPU: it.CPU, Memory: it.Memory, GPU: it.GPU, Pods: it.Pods, Offerings: map[string]float64{}}
		v.AllocCPU, v.AllocMem = it.CPU, it.Memory
		if it.Overhead != nil {
			v.AllocCPU -= it.Overhead.CPU
			v.AllocMem -= it.Overhead.Memory
		}
		for _, o := range it.Offerings {
			v.Offerings[o.Zone+"/"+o.CapacityType] = o.Price
		}
		ov[it.Name] = v
	}
	ctx := kwokoptions.ToContext(context.Background(), &kwokoptions.Options{InstanceTypesFilePath: karpenter})
	ktypes, err := kwokcloud.ConstructInstanceTypes(ctx)
	if err != nil {
		return 0, fmt.Errorf("Karpenter's kwok reader: %w", err)
	}
	kv := map[string]typeView{}
	for _, it := range ktypes {
		alloc := it.Allocatable()
		v := typeView{
			Arch: it.Requirements.Get(corev1.LabelArchStable).Any(),
			CPU:  it.Capacity.Cpu().MilliValue(), Memory: it.Capacity.Memory().Value(), Pods: it.Capacity.Pods().Value(),
			AllocCPU: alloc.Cpu().MilliValue(), AllocMem: alloc.Memory().Value(), Offerings: map[string]float64{},
		}
		if g, ok := it.Capacity[cloud.ResourceNVIDIAGPU]; ok {
			v.GPU = g.Value()
		}
		for _, o := range it.Offerings {
			v.Offerings[o.Zone()+"/"+o.CapacityType()] = o.Price
		}
		kv[it.Name] = v
	}
	if len(ov) != len(kv) {
		return 0, fmt.Errorf("our file has %d instance types, Karpenter's %d", len(ov), len(kv))
	}
	for name, o := range ov {
		k, ok := kv[name]
		if !ok {
			return 0, fmt.Errorf("instance type %s: in our file, not in Karpenter's", name)
		}
		if o.Arch != k.Arch || o.CPU != k.CPU || o.Memory != k.Memory || o.GPU != k.GPU || o.Pods != k.Pods ||
			o.AllocCPU != k.AllocCPU || o.AllocMem != k.AllocMem {
			return 0, fmt.Errorf("instance type %s: ours %+v, Karpenter's %+v", name, o, k)
		}
		if len(o.Offerings) != len(k.Offerings) {
			return 0, fmt.Errorf("instance type %s: %d offerings in ours, %d in Karpenter's", name, len(o.Offerings), len(k.Offerings))
		}
		for off, p := range o.Offerings {
			kp, ok := k.Offerings[off]
			if !ok || math.Abs(kp-p) > 1e-9 {
				return 0, fmt.Errorf("instance type %s offering %s: ours $%g/h, Karpenter's $%g/h (present %t)", name, off, p, kp, ok)
			}
		}
	}
	return len(ov), nil
}
