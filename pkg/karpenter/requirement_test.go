package karpenter

import (
	"math"
	"strconv"
	"testing"
)

func TestWithoutInclusiveOperatorsRewritesGteAndLte(t *testing.T) {
	for _, tc := range []struct {
		name, op  string
		values    []string
		wantOp    string
		wantValue string
		changed   bool
		wantErr   bool
	}{
		{name: "Gte becomes Gt one less", op: "Gte", values: []string{"4"}, wantOp: "Gt", wantValue: "3", changed: true},
		{name: "Gte 0 becomes Gt -1", op: "Gte", values: []string{"0"}, wantOp: "Gt", wantValue: "-1", changed: true},
		{name: "Lte becomes Lt one more", op: "Lte", values: []string{"16"}, wantOp: "Lt", wantValue: "17", changed: true},
		{name: "Gt is kept", op: "Gt", values: []string{"2"}, wantOp: "Gt", wantValue: "2"},
		{name: "In is kept", op: "In", values: []string{"a"}, wantOp: "In", wantValue: "a"},
		{name: "Gte needs an integer", op: "Gte", values: []string{"four"}, wantErr: true},
		{name: "Lte needs one value", op: "Lte", values: []string{"1", "2"}, wantErr: true},
		{name: "Lte at the top of int64", op: "Lte", values: []string{strconv.FormatInt(math.MaxInt64, 10)}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := Requirement{Key: "karpenter.k8s.aws/instance-cpu", Operator: tc.op, Values: tc.values}.WithoutInclusiveOperators()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got.Operator != tc.wantOp || len(got.Values) != 1 || got.Values[0] != tc.wantValue || changed != tc.changed {
				t.Errorf("got %s %v (changed %v), want %s [%s] (changed %v)", got.Operator, got.Values, changed, tc.wantOp, tc.wantValue, tc.changed)
			}
			if got.Key != "karpenter.k8s.aws/instance-cpu" {
				t.Errorf("key changed to %q", got.Key)
			}
		})
	}
}
