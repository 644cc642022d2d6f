package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
)

// fileDefaultPods is the pod capacity of an instance type whose file entry
// does not say: the kubelet's default maxPods.
const fileDefaultPods = 110

// fileInstanceType is one entry of the --instance-types file's instanceTypes list.
type fileInstanceType struct {
	Name            string          `json:"name"`
	CPU             json.RawMessage `json:"cpu"`
	Memory          json.RawMessage `json:"memory"`
	Pods            *int64          `json:"pods,omitempty"`
	GPU             int64           `json:"gpu,omitempty"`
	GPUName         string          `json:"gpuName,omitempty"`
	GPUManufacturer string          `json:"gpuManufacturer,omitempty"`
	Architecture    string          `json:"architecture,omitempty"`
	Overhead        *struct {
		CPU    json.RawMessage `json:"cpu,omitempty"`
		Memory json.RawMessage `json:"memory,omitempty"`
	} `json:"overhead,omitempty"`
	Offerings []fileOffering `json:"offerings"`
}

type fileOffering struct {
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	Price        *float64 `json:"price"`
}

// ReadInstanceTypes parses a user's instance-type list, YAML or JSON, as
// given to --instance-types:
//
//	instanceTypes:
//	- name: pc.large          # required, unique
//	  cpu: "4"                # Kubernetes quantities: "4", "3500m"
//	  memory: 16Gi
//	  pods: 110               # optional, default 110 (the kubelet's maxPods)
//	  gpu: 1                  # optional, with gpuName and gpuManufacturer
//	  architecture: arm64     # optional, amd64 (default) or arm64
//	  overhead: {cpu: 100m, memory: 1Gi}  # optional: what pods may not use
//	  offerings:              # at least one
//	  - {zone: dc1-a, capacityType: on-demand, price: 0.12}  # dollars per hour
//
// Unknown fields and invalid values are errors; each error is one line that
// names the file and the instance type.
func ReadInstanceTypes(name string, data []byte) ([]InstanceType, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid YAML: %s", name, strictjson.YAMLError(err))
	}
	// Decode the list, then each entry, so that errors name the entry.
	var f struct {
		InstanceTypes []json.RawMessage `json:"instanceTypes"`
	}
	if err := fileDecode(j, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(f.InstanceTypes) == 0 {
		return nil, fmt.Errorf("%s: instanceTypes: no instance types", name)
	}
	entries := make([]fileInstanceType, len(f.InstanceTypes))
	for i, raw := range f.InstanceTypes {
		if err := fileDecode(raw, &entries[i]); err != nil {
			return nil, fmt.Errorf("%s: instance type %d %q: %w", name, i, entries[i].Name, err)
		}
	}
	out := make([]InstanceType, 0, len(entries))
	seen := make(map[string]int, len(entries))
	for i := range entries {
		e := &entries[i]
		if j, dup := seen[e.Name]; dup && e.Name != "" {
			return nil, fmt.Errorf("%s: instance type %d %q: name: duplicate of instance type %d", name, i, e.Name, j)
		}
		seen[e.Name] = i
		it, err := e.instanceType()
		if err != nil {
			return nil, fmt.Errorf("%s: instance type %d %q: %s", name, i, e.Name, strictjson.OneLine(err.Error()))
		}
		out = append(out, it)
	}
	return out, nil
}

// instanceType validates e and converts it.
func (e *fileInstanceType) instanceType() (InstanceType, error) {
	it := InstanceType{
		Name: e.Name, GPU: e.GPU, GPUName: e.GPUName, GPUManufacturer: e.GPUManufacturer,
		Architecture: e.Architecture, Pods: fileDefaultPods,
	}
	if e.Name == "" {
		return it, errors.New("name: required")
	}
	var err error
	if it.CPU, err = fileQuantity("cpu", e.CPU, true, true); err != nil {
		return it, err
	}
	if it.Memory, err = fileQuantity("memory", e.Memory, false, true); err != nil {
		return it, err
	}
	if e.Pods != nil {
		if *e.Pods <= 0 {
			return it, fmt.Errorf("pods: must be positive (%d)", *e.Pods)
		}
		it.Pods = *e.Pods
	}
	if e.GPU < 0 {
		return it, fmt.Errorf("gpu: must not be negative (%d)", e.GPU)
	}
	switch e.Architecture {
	case "":
		it.Architecture = "amd64"
	case "amd64", "arm64":
	default:
		return it, fmt.Errorf("architecture: must be amd64 or arm64, got %q", e.Architecture)
	}
	if o := e.Overhead; o != nil {
		it.Overhead = &Overhead{}
		if it.Overhead.CPU, err = fileQuantity("overhead.cpu", o.CPU, true, false); err != nil {
			return it, err
		}
		if it.Overhead.Memory, err = fileQuantity("overhead.memory", o.Memory, false, false); err != nil {
			return it, err
		}
		if it.Overhead.CPU >= it.CPU || it.Overhead.Memory >= it.Memory {
			return it, errors.New("overhead: must be less than cpu and memory")
		}
	}
	if len(e.Offerings) == 0 {
		return it, errors.New("offerings: at least one is required")
	}
	offered := map[[2]string]int{}
	for i, o := range e.Offerings {
		p := fmt.Sprintf("offerings[%d]", i)
		if o.Zone == "" {
			return it, fmt.Errorf("%s.zone: required", p)
		}
		if o.CapacityType != CapacityTypeOnDemand && o.CapacityType != CapacityTypeSpot {
			return it, fmt.Errorf("%s.capacityType: must be %s or %s, got %q", p, CapacityTypeOnDemand, CapacityTypeSpot, o.CapacityType)
		}
		key := [2]string{o.Zone, o.CapacityType}
		if j, dup := offered[key]; dup {
			return it, fmt.Errorf("%s: duplicate of offerings[%d] (%s %s)", p, j, o.Zone, o.CapacityType)
		}
		offered[key] = i
		if o.Price == nil {
			return it, fmt.Errorf("%s.price: required (dollars per hour)", p)
		}
		if pr := *o.Price; math.IsNaN(pr) || math.IsInf(pr, 0) || pr < 0 {
			return it, fmt.Errorf("%s.price: must be a non-negative number of dollars per hour, got %v", p, pr)
		}
		it.Offerings = append(it.Offerings, Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: *o.Price})
	}
	return it, nil
}

// fileQuantity parses a Kubernetes quantity, in thousandths when milli. A
// required quantity must be positive; an optional one may be missing (0) but
// not negative.
func fileQuantity(field string, raw json.RawMessage, milli, required bool) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return 0, fmt.Errorf("%s: required", field)
		}
		return 0, nil
	}
	var q resource.Quantity
	if err := q.UnmarshalJSON(raw); err != nil {
		return 0, fmt.Errorf("%s: invalid quantity %s", field, raw)
	}
	f := q.AsApproximateFloat64()
	if milli {
		f *= 1000
	}
	switch {
	case q.Sign() < 0 || required && q.Sign() == 0:
		if required {
			return 0, fmt.Errorf("%s: must be positive (%s)", field, q.String())
		}
		return 0, fmt.Errorf("%s: must not be negative (%s)", field, q.String())
	case f > math.MaxInt64/2:
		return 0, fmt.Errorf("%s: %s is too large", field, q.String())
	case milli:
		return q.MilliValue(), nil
	default:
		return q.Value(), nil
	}
}

// fileDecode decodes JSON strictly, with the error on one line.
func fileDecode(j []byte, v any) error {
	if err := strictjson.Decode(j, v); err != nil {
		return errors.New(strictjson.OneLine(err.Error()))
	}
	return nil
}
