package aws

import (
	"context"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// A direct launch (kubectl rightsize tui --cloud aws) carries its marker as
// a tag, and List returns it, so that garbage collection adopts the
// instance rather than terminating it.
func TestADirectLaunchMarkerIsATagListReturns(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	direct := claim("default-direct", "1", "2Gi", onDemand())
	direct.Annotations = map[string]string{cloud.AnnotationLaunchedDirectly: "aws"}
	if _, err := w.p.Create(ctx, direct); err != nil {
		t.Fatal(err)
	}
	if _, err := w.p.Create(ctx, claim("default-operator", "1", "2Gi", onDemand())); err != nil {
		t.Fatal(err)
	}
	for _, in := range w.srv.Running() {
		want := map[string]string{"default-direct": "aws"}[in.Tags[TagNodeClaim]]
		if got := in.Tags[cloud.AnnotationLaunchedDirectly]; got != want {
			t.Errorf("instance of %s tagged %s=%q, want %q", in.Tags[TagNodeClaim], cloud.AnnotationLaunchedDirectly, got, want)
		}
	}
	list, err := w.p.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	for _, v := range list {
		want := map[string]string{"default-direct": "aws"}[v.Name]
		if got := v.Annotations[cloud.AnnotationLaunchedDirectly]; got != want {
			t.Errorf("List view %s: marker %q, want %q", v.Name, got, want)
		}
	}
}
