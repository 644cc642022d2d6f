package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// overlayPrice is what the NodeOverlay of TestOperatorNodeOverlay makes
// r5.xlarge cost: far below the catalog's c5.xlarge, the cheapest of the
// pool's three types without it.
const overlayPrice = 0.05

// TestOperatorNodeOverlay: the operator plans with Karpenter's NodeOverlays
// as explain does. A pool allows on-demand c5.xlarge, m5.xlarge and
// r5.xlarge in one zone; a pod of 3 CPUs lands on c5.xlarge, the cheapest.
// Then a NodeOverlay prices r5.xlarge at $0.05/h (a negotiated price the
// cloud does not know) and a second pod comes: its NodeClaim lists
// r5.xlarge first, the other two still allowed, marked
// cloud.AnnotationPriceOverlayApplied so that the simulated cloud takes the
// listed order (EC2's prioritized strategy) over its own prices, which
// would launch c5.xlarge; and consolidation replaces the c5.xlarge node by
// an r5.xlarge, planning the saving the overlay makes (c5.xlarge's price
// less $0.05). Written from Karpenter's NodeOverlay docs (concepts/
// nodeoverlays: price overrides change which instance types scheduling
// and consolidation choose) and aws/karpenter-provider-aws
// pkg/providers/instance (the overlay's prices become CreateFleet
// priorities).
func TestOperatorNodeOverlay(t *testing.T) {
	ctx := context.Background()
	e := startOpEnv(t)
	installNodeOverlayCRD(t, e.Env)
	d := &disruptionEnv{opEnv: e}
	d.op = e.startOperator(t, "operator", nil, "--leader-elect=false", "--batch-idle", "1s",
		"--consolidation-interval", "5s", "--disruption-validation-delay", "2s", "--replacement-timeout", "60s")
	const pool = "overlay"
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s"},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "c5.xlarge", "m5.xlarge", "r5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "overlay")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })

	// Without an overlay: the catalog's cheapest.
	d.deploy(t, ns, "web", 1, "3", "4Gi", pool)
	d.settled(t, ns, 1, 90*time.Second)
	before := d.claims(t, pool)
	if len(before) != 1 || before[0].Status.InstanceType != "c5.xlarge" {
		t.Fatalf("without an overlay: claims %v; want one c5.xlarge", describeClaims(before))
	}
	if _, ok := before[0].Annotations[cloud.AnnotationPriceOverlayApplied]; ok {
		t.Errorf("claim %s is marked %s with no NodeOverlay", before[0].Name, cloud.AnnotationPriceOverlayApplied)
	}
	c5 := nodeclaim.Price(&before[0])
	if c5 <= overlayPrice {
		t.Fatalf("c5.xlarge costs $%v/h; the scenario needs more than the overlay's $%v", c5, overlayPrice)
	}

	// The overlay, then a second pod.
	since := time.Now()
	overlay := fmt.Sprintf(`apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: negotiated-r5}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [r5.xlarge]}]
  price: "%v"
`, overlayPrice)
	apply := e.Kubectl(ctx, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(overlay)
	if r := runCmd(apply); r.err != nil {
		t.Fatalf("apply NodeOverlay: %v\n%s", r.err, r.stderr)
	}
	d.scale(t, ns, "web", 2)

	// Both nodes r5.xlarge: the new one launched so, the old replaced.
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		claims := d.claims(t, pool)
		last = describeClaims(claims)
		if len(claims) != 2 {
			return false, nil
		}
		for _, c := range claims {
			if c.DeletionTimestamp != nil || c.Status.InstanceType != "r5.xlarge" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("3 min after the NodeOverlay: claims %s; want two r5.xlarge", last)
	}
	d.settled(t, ns, 2, 60*time.Second)
	// And stay so: a node of an overlaid type is priced at the overlay's
	// price, not at the cloud's its claim records, else every round
	// would replace an r5.xlarge by an r5.xlarge.
	d.quiet(t, pool, 20*time.Second, 90*time.Second)
	if claims := d.claims(t, pool); len(claims) != 2 {
		t.Errorf("after 20 s quiet: claims %s; want the two r5.xlarge", describeClaims(claims))
	}

	// The provisioned claim: r5.xlarge first, the others still allowed,
	// marked for a prioritized launch.
	provisioned := 0
	for _, c := range d.claims(t, pool) {
		types := claimValues(&c, solver.LabelInstanceType)
		t.Logf("claim %s (batch %s): allows %v, annotations %s=%q; launched %s at $%s/h (catalog)", c.Name, c.Annotations[v1alpha1.AnnotationBatch],
			types, cloud.AnnotationPriceOverlayApplied, c.Annotations[cloud.AnnotationPriceOverlayApplied], c.Status.InstanceType, c.Status.PricePerHour)
		if strings.HasPrefix(c.Annotations[v1alpha1.AnnotationBatch], "replace-") {
			continue
		}
		provisioned++
		if len(types) < 2 || types[0] != "r5.xlarge" || !slices.Contains(types, "c5.xlarge") {
			t.Errorf("provisioned claim %s allows %v; want r5.xlarge first and c5.xlarge still allowed", c.Name, types)
		}
		if c.Annotations[cloud.AnnotationPriceOverlayApplied] != "true" {
			t.Errorf("provisioned claim %s is not marked %s", c.Name, cloud.AnnotationPriceOverlayApplied)
		}
	}
	if provisioned != 1 {
		t.Errorf("%d claims provisioned after the overlay, want 1 (the other replaces the c5.xlarge node)", provisioned)
	}

	// Consolidation planned the overlay's saving.
	want := c5 - overlayPrice
	var savings []float64
	for _, r := range d.recordsSince("consolidation planned", since) {
		s, _ := strconv.ParseFloat(fmt.Sprint(r["savingPerHour"]), 64)
		savings = append(savings, s)
	}
	if !slices.ContainsFunc(savings, func(s float64) bool { return math.Abs(s-want) < 1e-3 }) {
		t.Errorf("consolidation planned savings %v $/h after the overlay; want one of $%.4f/h (c5.xlarge $%v less the overlay's $%v)", savings, want, c5, overlayPrice)
	}
	t.Logf("NodeOverlay r5.xlarge $%v/h: the new pod's node and the replacement are r5.xlarge (c5.xlarge without it, $%v/h); consolidation planned savings %v $/h",
		overlayPrice, c5, savings)
}

// describeClaims names each claim's launched type, for messages.
func describeClaims(claims []v1alpha1.NodeClaim) string {
	var out []string
	for _, c := range claims {
		s := c.Name + ":" + c.Status.InstanceType
		if c.DeletionTimestamp != nil {
			s += "(deleting)"
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// installNodeOverlayCRD installs Karpenter's NodeOverlay CRD (a copy in
// testdata) and waits until the API server serves it.
func installNodeOverlayCRD(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, args := range [][]string{
		{"apply", "-f", "testdata/karpenter-nodeoverlays-crd.yaml"},
		{"wait", "--for", "condition=Established", "--timeout", "30s", "crd/nodeoverlays.karpenter.sh"},
	} {
		if r := kubectl(t, env, args...); r.err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, r.err, r.stderr)
		}
	}
}
