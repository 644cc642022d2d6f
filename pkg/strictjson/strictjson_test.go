package strictjson

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDecode(t *testing.T) {
	type obj struct {
		Name  string             `json:"name"`
		Count int                `json:"count"`
		CPU   *resource.Quantity `json:"cpu,omitempty"`
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
