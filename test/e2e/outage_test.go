package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// TestOperatorSurvivesAPIServerOutage runs a burst to completion and checks
// the operator's counters against the objects; then freezes the API server
// for 20 s in the middle of a second burst (issue 14: "a control plane that
// blinks"). With the default lease timings the leader cannot renew within
// its 10 s deadline: it must exit with one line saying so, and the
// operator started again (as its Deployment would) must finish the burst
// with no duplicate NodeClaim, no orphan instance and no pod lost.
func TestOperatorSurvivesAPIServerOutage(t *testing.T) {
	t.Parallel() // a plane of its own: it pauses the API server
	e := ownOpEnv(t)
	ns := e.namespace(t, "outage")
	e.nodePool(t, "outage", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "c6i", "m6i", "r6i"))
	args := []string{"--leader-election-id", "e2e-outage", "--disruption=false",
		"--leader-elect-lease-duration", "15s", "--leader-elect-renew-deadline", "10s", "--leader-elect-retry-period", "2s"}
	metricsAddr := freePort(t)
	op := e.startOperator(t, "operator", nil, append(args, "--metrics-bind-address", metricsAddr)...)
	op.waitLog(t, "provisioner started", 30*time.Second)

	var first, second []*corev1.Pod
	for i, p := range burstPods(ns) {
		if i%2 == 0 {
			first = append(first, p)
		} else {
			second = append(second, p)
		}
	}

	// A burst that completes: every transition counted once, the gauges
	// equal to the objects.
	e.createPods(t, first)
	e.waitRunning(t, ns, len(first), 3*time.Minute)
	claims := e.claims(t, "outage")
	want := float64(len(claims))
	var m map[string]float64
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		m = metricSums(scrape(t, metricsAddr))
		return m[`rightsize_nodeclaims{nodepool="outage",state="initialized"}`] == want, nil
	})
	if err != nil {
		t.Errorf("rightsize_nodeclaims initialized %v, want the %v NodeClaims", m[`rightsize_nodeclaims{nodepool="outage",state="initialized"}`], want)
	}
	for _, name := range []string{"rightsize_nodeclaims_created_total", "rightsize_nodeclaims_launched_total", "rightsize_nodeclaims_registered_total", "rightsize_nodeclaims_initialized_total"} {
		if got := m[name]; got != want {
			t.Errorf("%s = %v, want %v (one per NodeClaim)", name, got, want)
		}
	}
	if got := m[`rightsize_nodes{nodepool="outage",state="ready"}`]; got != want {
		t.Errorf("rightsize_nodes ready = %v, want %v", got, want)
	}
	t.Logf("counters after a burst of %d pods: %d NodeClaims; created %v, launched %v, registered %v, initialized %v; nominations %v first, %v again; pod Unschedulable→Running %v pods, mean %.2fs",
		len(first), len(claims), m["rightsize_nodeclaims_created_total"], m["rightsize_nodeclaims_launched_total"], m["rightsize_nodeclaims_registered_total"],
		m["rightsize_nodeclaims_initialized_total"], m[`rightsize_pods_nominated_total{attempt="first"}`], m[`rightsize_pods_nominated_total{attempt="again"}`],
		m["rightsize_pod_unschedulable_to_running_seconds_count"], m["rightsize_pod_unschedulable_to_running_seconds_sum"]/max(1, m["rightsize_pod_unschedulable_to_running_seconds_count"]))

	// The second burst, and the outage once the operator acts on it.
	before := len(claims)
	e.createPods(t, second)
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(e.claims(t, "outage")) > before, nil
	}); err != nil {
		t.Fatal("the operator created no NodeClaim for the second burst within a minute")
	}
	linesBefore := len(op.logs())
	paused := time.Now()
	if err := e.PauseAPIServer(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	code, err := op.exitCode(time.Minute)
	if err != nil {
		t.Fatalf("the operator did not exit after a 20 s outage with a 10 s renew deadline: %v", err)
	}
	// The reason is one line of its own (the manager's runnables may log
	// their cancelled calls around it as the process ends).
	lines := op.logs()
	var lost []string
	eventLines, errorLines := 0, 0
	for _, l := range lines[linesBefore:] {
		switch {
		case strings.Contains(l, "leader election lost"):
			lost = append(lost, l)
		case strings.Contains(l, "could not write an event"):
			eventLines++
		}
		if strings.Contains(l, `"level":"ERROR"`) {
			errorLines++
		}
	}
	if code != 1 || len(lost) != 1 || !strings.HasPrefix(lost[0], "error: leader election lost: ") || !strings.HasSuffix(lost[0], "; exiting so the Deployment restarts the operator") {
		t.Errorf("exit code %d, lines about the lost lease %q: want 1 and one line saying the lease was lost and the operator exits", code, lost)
	}
	if eventLines > 1 {
		t.Errorf("%d log lines about events not written during the outage, want at most one", eventLines)
	}
	t.Logf("outage: the operator exited %s after the API server froze, with %d log lines (%d errors) meanwhile: %s",
		time.Since(paused).Round(time.Second), len(lines)-linesBefore, errorLines, lost)

	// Started again, as the Deployment would: the burst completes.
	restartedAddr := freePort(t)
	restarted := e.startOperator(t, "restarted", nil, append(args, "--metrics-bind-address", restartedAddr)...)
	restarted.waitLog(t, "provisioner started", time.Minute)
	e.waitRunning(t, ns, len(first)+len(second), 3*time.Minute)

	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(first)+len(second) {
		t.Errorf("%d pods in %s, want %d: pods lost", len(pods.Items), ns, len(first)+len(second))
	}
	podsOn := map[string]int{}
	for _, p := range pods.Items {
		podsOn[p.Spec.NodeName]++
	}
	claims = e.claims(t, "outage")
	byProvider := map[string]string{}
	empty := 0
	for _, c := range claims {
		if other, ok := byProvider[c.Status.ProviderID]; ok {
			t.Errorf("NodeClaims %s and %s share instance %s", other, c.Name, c.Status.ProviderID)
		}
		byProvider[c.Status.ProviderID] = c.Name
		if podsOn[c.Status.NodeName] == 0 {
			empty++
		}
	}
	if empty > 0 {
		// The restarted operator reads back, from the NodeClaims still in
		// flight, the pods its predecessor nominated to them
		// (rightsize.dev/nominated-pods) and holds them there: a node
		// nobody uses was launched for pods another NodeClaim carried.
		t.Errorf("%d of %d NodeClaims have no pod of the bursts: launched for pods another NodeClaim already carried", empty, len(claims))
	}
	if restoredLog := restarted.records("nominations read back from the NodeClaims in flight"); len(restoredLog) > 0 {
		t.Logf("the restarted operator read back %v nominations", restoredLog[0]["pods"])
	}
	orphans := 0
	for _, n := range e.simNodes(t) {
		if _, ok := byProvider[n.Spec.ProviderID]; !ok {
			orphans++
		}
	}
	if orphans > 0 {
		t.Errorf("%d simulated instances without a NodeClaim", orphans)
	}
	t.Logf("after the outage: %d pods Running on %d NodeClaims (%d before the second burst), %d empty, %d orphan instances",
		len(pods.Items), len(claims), before, empty, orphans)
}

// metricSums parses a /metrics text into series → value, and adds each
// family's sum over its labels under the bare name.
func metricSums(text string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(value, &v); err != nil {
			continue
		}
		out[series] = v
		if name, _, labelled := strings.Cut(series, "{"); labelled {
			out[name] += v
		}
	}
	return out
}
