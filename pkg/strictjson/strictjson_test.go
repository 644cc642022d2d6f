package strictjson

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

func TestDecode(t *testing.T) {
	type obj struct {
		Name  string             `json:"name"`
		Count int                `json:"count"`
		CPU   *resource.Quantity `json:"cpu,omitempty"`
		R     *int32             `json:"replicas,omitempty"`
		U     uint8              `json:"u,omitempty"`
	}
	tests := []struct {
		in, want string
		value    bool // a *ValueError
	}{
		{`{"name":"a","count":1}`, "", false},
		{`{"name":1}`, "name: expected a string, got number", false},
		{`{"name":"a","nmae":"b"}`, `unknown field "nmae"`, false},
		{`{"name":"a","name":"b"}`, `duplicate field "name"`, false},
		{`{"cpu":"2 cores"}`, "quantities must match", true},
		{`{"replicas":2147483647}`, "", false},
		{`{"replicas":2147483648}`, "replicas: 2147483648 is out of range: an int32 holds -2147483648 to 2147483647", false},
		{`{"replicas":-2147483649}`, "replicas: -2147483649 is out of range: an int32 holds", false},
		{`{"replicas":1.5}`, "replicas: 1.5 is not a whole number", false},
		{`{"replicas":1e3}`, "replicas: 1e3 is not a whole number", false},
		{`{"replicas":"3"}`, "replicas: expected a number, got string", false},
		{`{"u":256}`, "u: 256 is out of range: a uint8 holds 0 to 255", false},
		{`{"count":99999999999999999999}`, "count: 99999999999999999999 is out of range: an int64 holds -9223372036854775808 to 9223372036854775807", false},
	}
	for _, tc := range tests {
		var o obj
		err := Decode([]byte(tc.in), &o)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			}
			continue
		}
		var ve *ValueError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ve) != tc.value {
			t.Errorf("%s: error %v, want %q (value error %v)", tc.in, err, tc.want, tc.value)
		}
	}
}

func TestYAMLError(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"NaN", "price: .nan\n", "NaN is not a finite number: a price or quantity must be a finite number (YAML's .nan and .inf are not)"},
		{"infinity", "cpu: -.inf\n", "-Inf is not a finite number: a price or quantity must be a finite number (YAML's .nan and .inf are not)"},
		{"syntax", "a: [\n", "yaml: line 1: did not find expected node content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := yaml.YAMLToJSONStrict([]byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if got := YAMLError(err); got != tc.want {
				t.Errorf("YAMLError = %q, want %q", got, tc.want)
			}
		})
	}
}
