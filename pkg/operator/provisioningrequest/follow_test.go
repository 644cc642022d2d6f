package provisioningrequest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// claimReader serves NodeClaims by name: "launched", "pending" or
// "deleting"; a name it lacks is NotFound.
type claimReader map[string]string

func (r claimReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	st, ok := r[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.Group, Resource: "nodeclaims"}, key.Name)
	}
	claim := obj.(*v1alpha1.NodeClaim)
	claim.Name = key.Name
	switch st {
	case "launched":
		claim.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionLaunched, Status: metav1.ConditionTrue}}
	case "deleting":
		now := metav1.Now()
		claim.DeletionTimestamp = &now
	case "error":
		return errors.New("API server unavailable")
	}
	return nil
}

func (r claimReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

func TestCheckGangProvisionsWhenAllLaunchAndRollsBackWhenOneIsLost(t *testing.T) {
	tests := []struct {
		name     string
		claims   claimReader
		cond     string // "" for no answer yet
		deleted  []string
		msgHas   string
		errorHas string
	}{
		{"all launched", claimReader{"a": "launched", "b": "launched", "c": "launched"}, prv1.ConditionProvisioned, nil, "all 3 nodes", ""},
		{"one still launching: no answer", claimReader{"a": "launched", "b": "pending", "c": "launched"}, "", nil, "", ""},
		{"one gone (insufficient capacity): the others deleted", claimReader{"a": "launched", "c": "pending"}, prv1.ConditionFailed, []string{"a", "c"}, "NodeClaim b could not be launched", ""},
		{"one being deleted counts as lost", claimReader{"a": "deleting", "b": "launched", "c": "launched"}, prv1.ConditionFailed, []string{"b", "c"}, "2 other NodeClaims are deleted", ""},
		{"all gone: nothing to delete", claimReader{}, prv1.ConditionFailed, nil, "a, b, c could not be launched", ""},
		{"a read error: no answer, no deletion", claimReader{"a": "launched", "b": "error", "c": "pending"}, "", nil, "", "API server unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := &fakePlanner{existing: map[string]bool{}}
			var deleted []string
			del := func(_ context.Context, c *v1alpha1.NodeClaim) error {
				deleted = append(deleted, c.Name)
				return nil
			}
			got, err := checkGang(context.Background(), tc.claims, pl, del, []string{"a", "b", "c"})
			if tc.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err = %v; want one with %q", err, tc.errorHas)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(deleted, tc.deleted) || !slices.Equal(pl.forgot, tc.deleted) {
				t.Errorf("deleted %v, forgot %v; want %v", deleted, pl.forgot, tc.deleted)
			}
			if tc.cond == "" {
				if got != nil {
					t.Errorf("answer %s=%s (%s); want none yet", got.Type, got.Status, got.Message)
				}
				return
			}
			if got == nil || got.Type != tc.cond || got.Status != metav1.ConditionTrue || !strings.Contains(got.Message, tc.msgHas) {
				t.Errorf("answer %+v; want %s=True with %q", got, tc.cond, tc.msgHas)
			}
		})
	}
}

func TestLaunchingNamesTheGangsNodeClaims(t *testing.T) {
	pr := request(prv1.ClassBestEffortAtomicScaleUp, set("w", 2))
	if launching(pr) != nil {
		t.Error("a new request is not launching")
	}
	pr.Status.ProvisioningClassDetails = map[string]prv1.Detail{DetailNodeClaims: "gpu-a,gpu-b"}
	pr.Status.Conditions = []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: metav1.ConditionFalse, Reason: ReasonLaunching}}
	if got := launching(pr); !slices.Equal(got, []string{"gpu-a", "gpu-b"}) {
		t.Errorf("launching = %v; want [gpu-a gpu-b]", got)
	}
	pr.Status.Conditions[0].Reason = ReasonCapacityIsNotFound
	if launching(pr) != nil {
		t.Error("a request not found capacity for is not launching")
	}
}
