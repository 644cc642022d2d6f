package importer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// TestImportKarpenterExamplesV1 imports every file of
// aws/karpenter-provider-aws examples/v1 (copies in
// testdata/karpenter-examples-v1, see SOURCE.md there): each must convert
// to at least one NodePool and its EC2NodeClass, with only the warnings
// listed, and read as explain -f reads it.
func TestImportKarpenterExamplesV1(t *testing.T) {
	// warnings are substrings of the only warnings a file may give.
	warnings := map[string][]string{
		"instance-store-ephemeral-storage.yaml": {"spec.instanceStorePolicy dropped"},
		"min-values-family.yaml":                {"minValues kept"},
		"min-values-multiple-keys.yaml":         {"minValues kept"},
		"windows-custom-userdata.yaml":          {"nodeClassRef.group: karpenter.k8s.aws/v1 read as karpenter.k8s.aws"},
	}
	files, err := filepath.Glob("testdata/karpenter-examples-v1/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 22 {
		t.Fatalf("%d example files, want the 22 of examples/v1", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			res, err := Import([]string{f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var pools, classes int
			for _, o := range res.Objects {
				switch o.(type) {
				case *v1alpha1.NodePool:
					pools++
				case *v1alpha1.EC2NodeClass:
					classes++
				}
			}
			if pools == 0 || classes == 0 {
				t.Errorf("%d NodePools and %d EC2NodeClasses, want at least one of each", pools, classes)
			}
			for _, w := range res.Warnings {
				ok := false
				for _, allowed := range warnings[name] {
					ok = ok || strings.Contains(w, allowed)
				}
				if !ok {
					t.Errorf("unexpected warning %q", w)
				}
			}
			if len(warnings[name]) > 0 && len(res.Warnings) == 0 {
				t.Errorf("no warning, want %q", warnings[name])
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := snapshot.Decode(f, data, &snapshot.Manifests{Strict: true}); err != nil {
				t.Errorf("explain -f cannot read it: %v", err)
			}
		})
	}
}

// TestImportEC2NodeClassV115Fields reads every EC2NodeClass field
// karpenter-provider-aws added up to v1.15: none fails strict decoding,
// each the operator cannot act on is dropped with one warning naming it,
// and those it acts on are kept.
func TestImportEC2NodeClassV115Fields(t *testing.T) {
	in := `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: c}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
  capacityReservationSelectorTerms: [{id: cr-1234}, {tags: {team: ml}, ownerID: "123456789012"}, {instanceMatchCriteria: open}]
  instanceStorePolicy: RAID0
  placementGroupSelector: {name: pg}
  networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]
  ipPrefixCount: 2
  connectionTracking: {tcpEstablishedTimeout: 300}
  cpuOptions: {nestedVirtualization: enabled}
  associatePublicIPAddress: false
  detailedMonitoring: true
  metadataOptions: {httpTokens: required, httpPutResponseHopLimit: 1}
  blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi, volumeInitializationRate: 300}}]
`
	res, err := Import([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Warnings, "\n")
	for _, field := range []string{"instanceStorePolicy", "placementGroupSelector", "networkInterfaces", "ipPrefixCount", "connectionTracking", "cpuOptions", "ebs.volumeInitializationRate"} {
		if n := strings.Count(all, "."+field+" dropped: "); n != 1 {
			t.Errorf("%d warnings dropping %s, want 1:\n%s", n, field, all)
		}
	}
	if n := strings.Count(all, "spec.capacityReservationSelectorTerms[2] (instanceMatchCriteria: open) dropped: "); n != 1 {
		t.Errorf("%d warnings dropping the instanceMatchCriteria term, want 1:\n%s", n, all)
	}
	if len(res.Warnings) != 8 {
		t.Errorf("%d warnings, want 8:\n%s", len(res.Warnings), all)
	}
	class := res.Objects[0].(*v1alpha1.EC2NodeClass)
	wantTerms := []v1alpha1.CapacityReservationSelectorTerm{{ID: "cr-1234"}, {Tags: map[string]string{"team": "ml"}, OwnerID: "123456789012"}}
	if got := class.Spec.CapacityReservationSelectorTerms; !reflect.DeepEqual(got, wantTerms) {
		t.Errorf("capacityReservationSelectorTerms %+v, want %+v", got, wantTerms)
	}
	if s := class.Spec; s.AssociatePublicIPAddress == nil || *s.AssociatePublicIPAddress || s.DetailedMonitoring == nil || !*s.DetailedMonitoring ||
		s.MetadataOptions == nil || s.MetadataOptions.HTTPPutResponseHopLimit == nil || *s.MetadataOptions.HTTPPutResponseHopLimit != 1 {
		t.Errorf("associatePublicIPAddress, detailedMonitoring or metadataOptions not kept: %+v", s)
	}
}

// TestImportSkipsNodeClaimsAndOverlays skips the Karpenter kinds that have
// no rightsize.dev counterpart to convert to, each with a sentence.
func TestImportSkipsNodeClaimsAndOverlays(t *testing.T) {
	in := `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: nc}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: ov}
spec: {priceAdjustment: "-10%"}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: a}
spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}}}}
`
	res, err := Import([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		`document 1: NodeClaim "nc" skipped: Karpenter makes NodeClaims from NodePools`,
		`document 2: NodeOverlay "ov" skipped: rightsize.dev has no NodeOverlay`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s", want, all)
		}
	}
	if len(res.Objects) != 1 {
		t.Errorf("%d objects, want the NodePool only", len(res.Objects))
	}
}

// TestImportNodePoolRequiringReservedCapacity: a Karpenter NodePool that
// launches into capacity reservations (capacity type reserved, a
// reservation type) imports with those requirements as they are and no
// warning, for the operator to plan reserved offerings first.
func TestImportNodePoolRequiringReservedCapacity(t *testing.T) {
	in := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: reserved-first}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}
      - {key: karpenter.k8s.aws/capacity-reservation-type, operator: In, values: [default]}
`
	res, err := Import([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings %q, want none", res.Warnings)
	}
	pool := res.Objects[0].(*v1alpha1.NodePool)
	want := []v1alpha1.NodeSelectorRequirement{
		{Key: v1alpha1.LabelCapacityType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"reserved", "on-demand"}},
		{Key: "karpenter.k8s.aws/capacity-reservation-type", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"default"}},
	}
	if got := pool.Spec.Template.Spec.Requirements; !reflect.DeepEqual(got, want) {
		t.Errorf("requirements %+v, want %+v", got, want)
	}
}
