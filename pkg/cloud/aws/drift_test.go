package aws

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
)

// launchInZoneA launches an on-demand amd64 node of the default class in
// us-east-1a (subnet-aaa, sg-node, ami-al2023amd64) and returns the claim as
// the operator stores it: the annotations and status Create returned.
func launchInZoneA(t *testing.T, w *world) *v1alpha1.NodeClaim {
	t.Helper()
	nc := claim("drift", "1", "2Gi", onDemand(), req(corev1.LabelTopologyZone, v1alpha1.NodeSelectorOpIn, "us-east-1a"),
		req(cloud.LabelArch, v1alpha1.NodeSelectorOpIn, "amd64"))
	got, err := w.p.Create(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	stored := nc.DeepCopy()
	stored.Annotations, stored.Labels, stored.Status = got.Annotations, got.Labels, got.Status
	return stored
}

func TestCreateStampsTheNodeClassHashAndViewsCarryItBack(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	got := launchInZoneA(t, w)
	want := defaultClass().Spec.Hash()
	if got.Annotations[v1alpha1.AnnotationNodeClassHash] != want || got.Annotations[v1alpha1.AnnotationNodeClassHashVersion] != v1alpha1.EC2NodeClassHashVersion {
		t.Fatalf("Create's annotations %v: want hash %s version %s", got.Annotations, want, v1alpha1.EC2NodeClassHashVersion)
	}
	running := w.srv.Running()
	if len(running) != 1 || running[0].Tags[v1alpha1.AnnotationNodeClassHash] != want {
		t.Fatalf("instances %+v: want one tagged with the hash", running)
	}
	if running[0].SubnetID != "subnet-aaa" || running[0].ImageID != "ami-al2023amd64" || strings.Join(running[0].SecurityGroupIDs, ",") != "sg-node" {
		t.Fatalf("launched in %s from %s with %v; the cases below assume subnet-aaa, ami-al2023amd64, sg-node",
			running[0].SubnetID, running[0].ImageID, running[0].SecurityGroupIDs)
	}
	view, err := w.p.Get(ctx, got.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := w.p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if view.Annotations[v1alpha1.AnnotationNodeClassHash] != want || len(list) != 1 || list[0].Annotations[v1alpha1.AnnotationNodeClassHash] != want {
		t.Errorf("Get annotations %v, List %d views: want the hash on each (adoption keeps it)", view.Annotations, len(list))
	}
	// A retried Create finds the instance and returns the hash too.
	again, err := w.p.Create(ctx, claim("drift", "1", "2Gi", onDemand()))
	if err != nil || again.Annotations[v1alpha1.AnnotationNodeClassHash] != want {
		t.Errorf("retried Create = %v, %v; want the hash", again.Annotations, err)
	}
}

func TestIsDrifted(t *testing.T) {
	// edit returns the default class changed, with its generation bumped as
	// the API server does on a spec change.
	edit := func(change func(*v1alpha1.EC2NodeClass)) func(*world) {
		return func(w *world) {
			nc := defaultClass()
			nc.Generation = 2
			change(nc)
			w.setClass(nc)
		}
	}
	tests := []struct {
		name   string
		change func(*world)
		claim  func(*v1alpha1.NodeClaim)
		want   string // fragment; "" means not drifted
	}{
		{name: "unchanged", want: ""},
		{name: "labels and a selector term that still selects the same", change: edit(func(nc *v1alpha1.EC2NodeClass) {
			nc.Labels = map[string]string{"owner": "me"}
			nc.Spec.SubnetSelectorTerms = append(nc.Spec.SubnetSelectorTerms, v1alpha1.SubnetSelectorTerm{ID: "subnet-ccc"})
		}), want: ""},
		{name: "static: tags", change: edit(func(nc *v1alpha1.EC2NodeClass) { nc.Spec.Tags["team"] = "web" }),
			want: "EC2NodeClass default's launch settings changed since the node was launched"},
		{name: "static: user data", change: edit(func(nc *v1alpha1.EC2NodeClass) { nc.Spec.UserData = aws.String("echo hi") }),
			want: "launch settings changed"},
		{name: "static: role", change: edit(func(nc *v1alpha1.EC2NodeClass) { nc.Spec.Role = "OtherRole" }),
			want: "launch settings changed"},
		{name: "static change, claim launched before hashes", change: edit(func(nc *v1alpha1.EC2NodeClass) { nc.Spec.Role = "OtherRole" }),
			claim: func(c *v1alpha1.NodeClaim) { c.Annotations = nil }, want: ""},
		{name: "static change, claim of another hash version", change: edit(func(nc *v1alpha1.EC2NodeClass) { nc.Spec.Role = "OtherRole" }),
			claim: func(c *v1alpha1.NodeClaim) { c.Annotations[v1alpha1.AnnotationNodeClassHashVersion] = "v0" }, want: ""},
		{name: "image: the AMI selector now picks another image", change: edit(func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []v1alpha1.AMISelectorTerm{{ID: "ami-custom"}}
			nc.Spec.AMIFamily = aws.String(FamilyAL2023)
		}), want: "its image ami-al2023amd64 is no longer among the images EC2NodeClass default selects (ami-custom)"},
		{name: "image: a new image published for the alias, seen once the resolution expires", change: func(w *world) {
			w.srv.AddImage(ec2test.Image{ID: "ami-al2023new", Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20260601", Owner: "amazon",
				Arch: "x86_64", Created: w.clock.Now()})
			w.srv.SetParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-al2023new")
			w.clock.Step(DefaultNodeClassResolveTTL)
		}, want: "its image ami-al2023amd64 is no longer among"},
		{name: "subnet: the selector no longer selects the instance's", change: edit(func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []v1alpha1.SubnetSelectorTerm{{ID: "subnet-bbb"}}
		}), want: "its subnet subnet-aaa is no longer among the subnets EC2NodeClass default selects"},
		{name: "security groups: one more selected", change: edit(func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = append(nc.Spec.SecurityGroupSelectorTerms, v1alpha1.SecurityGroupSelectorTerm{ID: "sg-other"})
		}), want: "its security groups (sg-node) are not the ones EC2NodeClass default selects now (sg-node, sg-other)"},
		{name: "a claim of another node class kind", change: edit(func(nc *v1alpha1.EC2NodeClass) { nc.Spec.Role = "OtherRole" }),
			claim: func(c *v1alpha1.NodeClaim) { c.Spec.NodeClassRef.Kind = "SimNodeClass" }, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			stored := launchInZoneA(t, w)
			if tt.change != nil {
				tt.change(w)
			}
			if tt.claim != nil {
				tt.claim(stored)
			}
			why, err := w.p.IsDrifted(context.Background(), stored)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.want == "") != (why == "") || !strings.Contains(why, tt.want) {
				t.Errorf("IsDrifted = %q, want %q", why, tt.want)
			}
		})
	}
}

func TestIsDriftedListsTheClustersInstancesOnceAMinute(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	a := launchInZoneA(t, w)
	b := claim("other", "1", "2Gi", onDemand())
	bv, err := w.p.Create(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	b.Annotations, b.Status = bv.Annotations, bv.Status
	before := w.srv.Calls("DescribeInstances")
	for range 3 {
		for _, c := range []*v1alpha1.NodeClaim{a, b} {
			if why, err := w.p.IsDrifted(ctx, c); err != nil || why != "" {
				t.Fatalf("IsDrifted(%s) = %q, %v; want not drifted", c.Name, why, err)
			}
		}
	}
	if got := w.srv.Calls("DescribeInstances") - before; got != 1 {
		t.Errorf("6 checks of 2 claims made %d DescribeInstances calls, want 1 listing", got)
	}
	// An instance launched after the listing is described on its own.
	c := claim("late", "1", "2Gi", onDemand())
	cv, err := w.p.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	c.Annotations, c.Status = cv.Annotations, cv.Status
	before = w.srv.Calls("DescribeInstances")
	if why, err := w.p.IsDrifted(ctx, c); err != nil || why != "" {
		t.Fatalf("IsDrifted(late) = %q, %v", why, err)
	}
	if got := w.srv.Calls("DescribeInstances") - before; got != 1 {
		t.Errorf("a claim launched after the listing: %d DescribeInstances calls, want 1", got)
	}
	// A minute later the listing is refreshed; a terminated instance is
	// not drifted (garbage collection deletes its claim).
	w.srv.Terminate(instanceID(t, a))
	w.clock.Step(instanceListTTL)
	before = w.srv.Calls("DescribeInstances")
	if why, err := w.p.IsDrifted(ctx, a); err != nil || why != "" {
		t.Errorf("IsDrifted of a terminated instance = %q, %v; want \"\", nil", why, err)
	}
	if got := w.srv.Calls("DescribeInstances") - before; got < 1 {
		t.Errorf("no DescribeInstances after the listing expired")
	}
}

func TestIsDriftedOfAMissingClassIsNotReady(t *testing.T) {
	w := newWorld(t)
	stored := launchInZoneA(t, w)
	w.p.opts.NodeClasses = func(context.Context, string) (*v1alpha1.EC2NodeClass, error) { return nil, nil }
	w.clock.Step(DefaultNodeClassResolveTTL)
	var notReady *cloud.NodeClassNotReadyError
	if why, err := w.p.IsDrifted(context.Background(), stored); !errors.As(err, &notReady) {
		t.Errorf("IsDrifted = %q, %v; want a NodeClassNotReadyError (drift unknown)", why, err)
	}
}

func instanceID(t *testing.T, c *v1alpha1.NodeClaim) string {
	t.Helper()
	id, err := ParseProviderID(c.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
