package plan

import (
	"fmt"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestCheckFamiliesNamesTheTypoAndWhatWasMeant(t *testing.T) {
	types := []solver.InstanceType{}
	for _, f := range []string{"m7a", "m7g", "m7i", "c7i", "r7i"} {
		types = append(types, solver.InstanceType{Name: f + ".large", Labels: map[string]string{cloud.LabelInstanceFamily: f}})
	}
	tests := []struct {
		families []string
		want     string
	}{
		{[]string{"m7i", "c7i"}, ""},
		{nil, ""},
		{[]string{"m7i", "m7x"}, `--instance-family "m7x": no such instance family in the test catalog; did you mean m7a, m7g, m7i?`},
		{[]string{"c7"}, `--instance-family "c7": no such instance family in the test catalog; did you mean c7i?`},
		{[]string{"foo"}, `--instance-family "foo": no such instance family in the test catalog`},
	}
	for _, tc := range tests {
		err := CheckFamilies(types, tc.families, "--instance-family", "test catalog")
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("CheckFamilies(%v) = %v, want %q", tc.families, err, tc.want)
		}
	}
}
