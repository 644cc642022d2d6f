package snapshot

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

func TestReadsCommitments(t *testing.T) {
	const doc = `apiVersion: rightsize.dev/v1alpha1
kind: Commitment
metadata: {name: m6i-ri}
spec:
  type: ReservedInstances
  reservedInstances: {instanceType: m6i.large, instanceCount: 5, pricePerHour: "0.06"}
---
apiVersion: rightsize.dev/v1alpha1
kind: Commitment
metadata: {name: compute}
spec:
  type: ComputeSavingsPlan
  savingsPlan: {commitment: "5", discount: "0.28"}
`
	var m Manifests
	if err := Decode("c.yaml", []byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Commitments) != 2 || m.Commitments[0].Name != "m6i-ri" || m.Commitments[1].Spec.Type != v1alpha1.CommitmentComputeSavingsPlan {
		t.Fatalf("Commitments = %+v", m.Commitments)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings: %q", m.Warnings)
	}
}

func TestRefusesAnInvalidCommitment(t *testing.T) {
	const doc = `apiVersion: rightsize.dev/v1alpha1
kind: Commitment
metadata: {name: bad}
spec:
  type: ComputeSavingsPlan
  savingsPlan: {commitment: "5", region: us-east-1, discount: "0.2"}
`
	var m Manifests
	err := Decode("c.yaml", []byte(doc), &m)
	if err == nil || !strings.Contains(err.Error(), "a ComputeSavingsPlan applies to every family and region") || !strings.Contains(err.Error(), "c.yaml: document 1") {
		t.Fatalf("err = %v, want the CEL rule's message with the document", err)
	}
}

// TestClusterCommitments: a cluster's Commitments are read as manifests'
// are, and one the API server's rules would refuse is left out with a
// warning.
func TestClusterCommitments(t *testing.T) {
	cl := FromObjects(&Objects{Commitments: []json.RawMessage{
		json.RawMessage(`{"apiVersion":"rightsize.dev/v1alpha1","kind":"Commitment","metadata":{"name":"ri"},"spec":{"type":"ReservedInstances","reservedInstances":{"instanceType":"m6i.large","instanceCount":5}}}`),
		json.RawMessage(`{"apiVersion":"rightsize.dev/v1alpha1","kind":"Commitment","metadata":{"name":"bad"},"spec":{"type":"ComputeSavingsPlan","savingsPlan":{"commitment":"5"}}}`),
	}})
	if len(cl.Commitments) != 1 || cl.Commitments[0].Name != "ri" {
		t.Fatalf("Commitments = %+v, want ri alone", cl.Commitments)
	}
	if !slices.ContainsFunc(cl.Warnings, func(w string) bool {
		return strings.Contains(w, "Commitment bad: left out: spec.savingsPlan: give the plan's rates or a discount")
	}) {
		t.Errorf("warnings %q lack the invalid Commitment", cl.Warnings)
	}
}
