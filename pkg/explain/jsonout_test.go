package explain

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// printed is what cli-runtime's JSON printer (what -o json used before
// writeJSON) prints for r.
func printed(t *testing.T, r *Result) []byte {
	t.Helper()
	printer, err := genericclioptions.NewJSONYamlPrintFlags().ToPrinter("json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := printer.PrintObj(r, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tricky are strings that encoding/json escapes, and plain ones.
var tricky = []string{"", "plain", `q"uo\te`, "<a&b>", "line\nfeed\ttab\r\b\f\x01\x1f\x7f", "bad\xffutf8\xc3", "sep\u2028\u2029", "ünïcode 日本"}

// fill sets every exported field reachable from v to a value that is not
// its zero, drawing strings from tricky and numbers that encoding/json
// formats in both notations, so that a field writeJSON forgets or writes
// differently shows up.
func fill(v reflect.Value, n *int, depth int) {
	if depth > 8 {
		return
	}
	*n++
	seed := *n
	switch v.Kind() {
	case reflect.String:
		v.SetString(tricky[seed%len(tricky)] + strings.Repeat("x", seed%3))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed*7 + 1))
	case reflect.Float64:
		v.SetFloat([]float64{0.1, 1e-7, 3.25e21, 161.87178, 1, 123456789.123, 5e20, 1e-6, -2.5e-9}[seed%9])
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct && v.Type().Elem().PkgPath() == "time" {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n, depth+1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 3, 3)
		for i := range 3 {
			fill(s.Index(i), n, depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 3 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n, depth+1)
			fill(e, n, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type().PkgPath() == "time" {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n, depth+1)
			}
		}
	}
}

// TestWriteJSONSameBytes: -o json prints the same bytes as cli-runtime's
// printer did, for a result with every field set to awkward values, for
// nil and empty slices and maps, and with a live cluster's fields.
func TestWriteJSONSameBytes(t *testing.T) {
	full := &Result{}
	var n int
	fill(reflect.ValueOf(full).Elem(), &n, 0)
	full.Kind, full.APIVersion = "Plan", "rightsize.dev/v1alpha1"

	empties := &Result{}
	*empties = *full
	empties.LiveResult = nil
	empties.Nodes = []ResultNode{
		{Name: "new-1"},
		{Name: "new-2", Pods: []string{}, Allocatable: map[string]string{}, Requested: map[string]string{}, Labels: map[string]string{}, Taints: []v1.Taint{}, InstanceTypeOptions: []string{}},
		{Name: "new-3", PricePerHour: -0.5, Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}},
	}
	empties.Unschedulable = []ResultUnscheduled{{Pod: "a/b", Reason: "r"}, {}}

	prices := &Result{TypeMeta: full.TypeMeta, Nodes: []ResultNode{}}
	for _, f := range []float64{0, 0.1, 1e-7, 1e-6, 9.99e-7, -2.5e-9, 5e20, 1e21, 3.25e21, 161.87178, 123456789.123, 1e300, 5e-324, math.MaxFloat64} {
		prices.Nodes = append(prices.Nodes, ResultNode{PricePerHour: f})
	}

	for _, tc := range []struct {
		name string
		r    *Result
	}{
		{"prices in both notations", prices},
		{"a plan of Karpenter's mix", mixResult(t, 400)},
		{"every field set", full},
		{"empty and nil members", empties},
		{"nil nodes and unschedulable", &Result{TypeMeta: full.TypeMeta}},
		{"empty nodes and unschedulable", &Result{TypeMeta: full.TypeMeta, Nodes: []ResultNode{}, Unschedulable: []ResultUnscheduled{}}},
		{"nil nodes only", &Result{TypeMeta: full.TypeMeta, Unschedulable: full.Unschedulable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := printed(t, tc.r)
			var got bytes.Buffer
			if err := writeJSON(&got, tc.r); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				i := 0
				for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
					i++
				}
				t.Fatalf("writeJSON differs from the printer at byte %d of %d:\n got …%q\nwant …%q", i, len(want),
					got.Bytes()[max(0, i-80):min(got.Len(), i+80)], want[max(0, i-80):min(len(want), i+80)])
			}
		})
	}
}

// TestWriteJSONFields: writeJSON writes ResultNode and ResultUnscheduled
// field by field; a field added to either must be added to it (and to
// this list) or -o json would drop it. Fields tagged "-" are written by
// neither.
func TestWriteJSONFields(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		tags []string
	}{
		{reflect.TypeFor[ResultNode](), []string{"name", "instanceType", "capacityType", "zone", "nodePool", "pricePerHour", "pods", "allocatable", "requested", "labels,omitempty", "taints,omitempty", "reason", "instanceTypeOptions,omitempty"}},
		{reflect.TypeFor[ResultUnscheduled](), []string{"pod", "owner,omitempty", "reason"}},
	} {
		var tags []string
		for f := range tc.typ.Fields() {
			if tag := f.Tag.Get("json"); tag != "-" {
				tags = append(tags, tag)
			}
		}
		if !slices.Equal(tags, tc.tags) {
			t.Errorf("%s has fields %q; writeJSON writes %q: update jsonWriter and this test", tc.typ, tags, tc.tags)
		}
	}
}

// TestWriteJSONRefusesNaN: a price that is not a number fails as
// encoding/json fails, before anything is written.
func TestWriteJSONRefusesNaN(t *testing.T) {
	r := &Result{Nodes: []ResultNode{{Name: "new-1", PricePerHour: math.NaN()}}}
	var buf bytes.Buffer
	if err := writeJSON(&buf, r); err == nil || buf.Len() > 0 {
		t.Fatalf("writeJSON of a NaN price: err %v, wrote %d bytes; want an error and nothing written", err, buf.Len())
	}
}

// mixResult is explain's result for n pods of Karpenter's mix on the
// default pool.
func mixResult(t *testing.T, n int) *Result {
	t.Helper()
	cat := plan.Catalog{Region: "us-east-1"}
	types, desc, err := cat.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	m := &snapshot.Manifests{Pods: bench.KarpenterMix(n, 42).Pods}
	built, err := plan.Build(plan.Input{Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}})
	if err != nil {
		t.Fatal(err)
	}
	solved, err := solver.Solve(built.Problem)
	if err != nil {
		t.Fatal(err)
	}
	r := NewResult(report.FromPlan(built.Problem, solved, built.InFlight), ResultSource{Origin: "embedded", Description: desc})
	setDefaults(r, built)
	return r
}
