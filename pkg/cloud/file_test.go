package cloud

import (
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestReadInstanceTypes(t *testing.T) {
	const gi = 1 << 30
	tests := []struct {
		name string
		in   string
		want []InstanceType
	}{
		{name: "yaml with every field", in: `
instanceTypes:
- name: pc.large
  cpu: 3500m
  memory: 16Gi
  pods: 58
  gpu: 2
  gpuName: t4
  gpuManufacturer: nvidia
  architecture: arm64
  overhead: {cpu: 100m, memory: 512Mi}
  offerings:
  - {zone: a, capacityType: on-demand, price: 0.25}
  - {zone: b, capacityType: spot, price: 0}
`, want: []InstanceType{{
			Name: "pc.large", CPU: 3500, Memory: 16 * gi, Pods: 58, GPU: 2, GPUName: "t4", GPUManufacturer: "nvidia",
			Architecture: "arm64", Overhead: &Overhead{CPU: 100, Memory: 512 << 20},
			Offerings: []Offering{{Zone: "a", CapacityType: "on-demand", Price: 0.25}, {Zone: "b", CapacityType: "spot", Price: 0}},
		}}},
		{name: "json with defaults", in: `{"instanceTypes": [
  {"name": "s", "cpu": 4, "memory": "8G", "offerings": [{"zone": "z", "capacityType": "spot", "price": 1e-2}]},
  {"name": "t", "cpu": "1", "memory": 1073741824, "offerings": [{"zone": "z", "capacityType": "on-demand", "price": 1}]}]}`,
			want: []InstanceType{
				{Name: "s", CPU: 4000, Memory: 8e9, Pods: 110, Architecture: "amd64", Offerings: []Offering{{Zone: "z", CapacityType: "spot", Price: 0.01}}},
				{Name: "t", CPU: 1000, Memory: gi, Pods: 110, Architecture: "amd64", Offerings: []Offering{{Zone: "z", CapacityType: "on-demand", Price: 1}}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadInstanceTypes("types.yaml", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadInstanceTypesErrors(t *testing.T) {
	// entry builds a one-type file from fields, in YAML flow style.
	entry := func(fields string) string {
		return "instanceTypes:\n- name: ok\n  cpu: 2\n  memory: 4Gi\n  offerings: [{zone: a, capacityType: spot, price: 0.1}]\n- " + fields + "\n"
	}
	const offer = "offerings: [{zone: a, capacityType: spot, price: 0.1}]"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"malformed YAML", "instanceTypes: [", "types.yaml: invalid YAML"},
		{"not a list", "instanceTypes: {a: 1}\n", `types.yaml: instanceTypes: expected a list, got object`},
		{"wrong case", entry("{Name: big, cpu: 2, memory: 4Gi, " + offer + "}"), `unknown field "Name"`},
		{"unknown top-level field", "instanceTypes: []\nzones: [a]\n", `types.yaml: unknown field "zones"`},
		{"no instance types", "instanceTypes: []\n", "types.yaml: instanceTypes: no instance types"},
		{"empty file", "", "no instance types"},
		{"unknown field", entry("{name: big, cpu: 2, memory: 4Gi, cpus: 4, " + offer + "}"), `types.yaml: instance type 1 "big": unknown field "cpus"`},
		{"unknown offering field", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: spot, price: 1, currency: EUR}]}"), `instance type 1 "big": unknown field "offerings[0].currency"`},
		{"missing name", entry("{cpu: 2, memory: 4Gi, " + offer + "}"), `types.yaml: instance type 1 "": name: required`},
		{"duplicate name", entry("{name: ok, cpu: 2, memory: 4Gi, " + offer + "}"), `instance type 1 "ok": name: duplicate of instance type 0`},
		{"missing cpu", entry("{name: big, memory: 4Gi, " + offer + "}"), `instance type 1 "big": cpu: required`},
		{"zero cpu", entry("{name: big, cpu: 0, memory: 4Gi, " + offer + "}"), `instance type 1 "big": cpu: must be positive (0)`},
		{"negative memory", entry("{name: big, cpu: 2, memory: -4Gi, " + offer + "}"), `memory: must be positive (-4Gi)`},
		{"bad quantity", entry("{name: big, cpu: two, memory: 4Gi, " + offer + "}"), `instance type 1 "big": cpu: invalid quantity "two"`},
		{"huge quantity", entry("{name: big, cpu: 1E, memory: 4Gi, " + offer + "}"), `cpu: 1E is too large`},
		{"bad pods", entry("{name: big, cpu: 2, memory: 4Gi, pods: 0, " + offer + "}"), `pods: must be positive (0)`},
		{"bad architecture", entry("{name: big, cpu: 2, memory: 4Gi, architecture: x86, " + offer + "}"), `architecture: must be amd64 or arm64, got "x86"`},
		{"negative gpu", entry("{name: big, cpu: 2, memory: 4Gi, gpu: -1, " + offer + "}"), `gpu: must not be negative (-1)`},
		{"negative overhead", entry("{name: big, cpu: 2, memory: 4Gi, overhead: {cpu: -1}, " + offer + "}"), `overhead.cpu: must not be negative (-1)`},
		{"overhead too big", entry("{name: big, cpu: 2, memory: 4Gi, overhead: {cpu: 2}, " + offer + "}"), `overhead: must be less than cpu and memory`},
		{"no offerings", entry("{name: big, cpu: 2, memory: 4Gi}"), `instance type 1 "big": offerings: at least one is required`},
		{"empty zone", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{capacityType: spot, price: 1}]}"), `offerings[0].zone: required`},
		{"bad capacity type", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: reserved, price: 1}]}"), `offerings[0].capacityType: must be on-demand or spot, got "reserved"`},
		{"duplicate offering", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: spot, price: 1}, {zone: a, capacityType: spot, price: 2}]}"), `offerings[1]: duplicate of offerings[0]`},
		{"missing price", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: spot}]}"), `offerings[0].price: required`},
		{"negative price", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: spot, price: -0.5}]}"), `instance type 1 "big": offerings[0].price: must be a non-negative number of dollars per hour, got -0.5`},
		{"NaN price", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: spot, price: .nan}]}"), `types.yaml: invalid YAML`},
		{"price as a string", entry("{name: big, cpu: 2, memory: 4Gi, offerings: [{zone: a, capacityType: spot, price: cheap}]}"), `types.yaml: instance type 1 "big": offerings.price: expected a number, got string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadInstanceTypes("types.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "types.yaml: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, tt.want)
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("error has several lines: %q", msg)
			}
		})
	}
}

func TestExampleInstanceTypes(t *testing.T) {
	const name = "../../examples/instance-types.yaml"
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	types, err := ReadInstanceTypes(name, data)
	if err != nil {
		t.Fatal(err)
	}
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	for _, it := range types {
		for _, o := range it.Offerings {
			zones[o.Zone], capacityTypes[o.CapacityType] = true, true
		}
	}
	if len(types) < 3 || len(zones) != 2 || len(capacityTypes) != 2 {
		t.Errorf("example has %d types, zones %v, capacity types %v; want 3-4 types, 2 zones, on-demand and spot", len(types), zones, capacityTypes)
	}
}

func FuzzReadInstanceTypes(f *testing.F) {
	if data, err := os.ReadFile("../../examples/instance-types.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"instanceTypes": [{"name": "s", "cpu": 4, "memory": "8G", "offerings": [{"zone": "z", "capacityType": "spot", "price": 0.01}]}]}`))
	f.Add([]byte("instanceTypes:\n- {name: a, cpu: 1m, memory: 1, pods: 1, overhead: {cpu: 0}, offerings: [{zone: z, capacityType: on-demand, price: 0}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		types, err := ReadInstanceTypes("f.yaml", data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "f.yaml: ") || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("bad error %q", msg)
			}
			return
		}
		names := map[string]bool{}
		for _, it := range types {
			if it.Name == "" || names[it.Name] || it.CPU <= 0 || it.Memory <= 0 || it.Pods <= 0 || len(it.Offerings) == 0 {
				t.Fatalf("invalid instance type accepted: %+v", it)
			}
			names[it.Name] = true
			if o := it.Overhead; o != nil && (o.CPU < 0 || o.Memory < 0 || o.CPU >= it.CPU || o.Memory >= it.Memory) {
				t.Fatalf("invalid overhead accepted: %+v", it)
			}
			for _, o := range it.Offerings {
				if o.Zone == "" || (o.CapacityType != CapacityTypeOnDemand && o.CapacityType != CapacityTypeSpot) ||
					math.IsNaN(o.Price) || math.IsInf(o.Price, 0) || o.Price < 0 {
					t.Fatalf("invalid offering accepted: %+v", o)
				}
			}
		}
	})
}
