package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// walkthroughPage is the getting-started walkthrough TestWalkthrough runs.
var walkthroughPage = filepath.Join("..", "..", "docs", "tasks", "walkthrough.md")

// pageBlocks returns the page's fenced code blocks of one language, in
// order.
func pageBlocks(t *testing.T, path, lang string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestWalkthrough runs docs/tasks/walkthrough.md on the test control plane,
// so that the page cannot rot: its manifests (every yaml block) are applied
// as written, and its `kubectl scale` and `kubectl rightsize explain`
// commands run as written, in a namespace of their own. The steps that set
// up a kind cluster, kwok and the in-cluster operator are what the test
// plane and an operator run out of cluster (`--cloud sim`) stand for. The
// page's promise is checked: five pods get a node and run; scaled to zero,
// the node goes.
func TestWalkthrough(t *testing.T) {
	manifests := pageBlocks(t, walkthroughPage, "yaml")
	var commands []string
	for _, b := range pageBlocks(t, walkthroughPage, "sh") {
		for _, line := range strings.Split(b, "\n") {
			if strings.HasPrefix(line, "kubectl scale ") || strings.HasPrefix(line, "kubectl rightsize explain") {
				commands = append(commands, line)
			}
		}
	}
	if len(manifests) != 2 || len(commands) != 3 {
		t.Fatalf("%s: %d yaml blocks and commands %q, want the NodePool, the Deployment, two scales and an explain", walkthroughPage, len(manifests), commands)
	}
	e := startOpEnv(t)
	ns := e.namespace(t, "walkthrough")
	dir := t.TempDir()
	for i, m := range manifests {
		path := filepath.Join(dir, "m"+string(rune('0'+i))+".yaml")
		if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := kubectl(t, e.Env, "apply", "-n", ns, "-f", path); r.err != nil {
			t.Fatalf("kubectl apply of the page's manifest %d: %v\n%s", i+1, r.err, r.stderr)
		}
	}
	e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-walkthrough", "--batch-idle", "1s")
	t.Cleanup(func() { e.cleanup(t, ns, "walkthrough") })
	run := func(line string) result {
		t.Helper()
		args := append(strings.Fields(strings.TrimPrefix(line, "kubectl ")), "-n", ns)
		r := kubectl(t, e.Env, args...)
		if r.err != nil {
			t.Fatalf("%s: %v\n%s%s", line, r.err, r.stdout, r.stderr)
		}
		return r
	}

	start := time.Now()
	run(commands[0]) // scale to 5
	explain := run(commands[1])
	if !strings.Contains(explain.stdout, "inflate") {
		t.Errorf("kubectl rightsize explain does not name the pending Deployment:\n%s", explain.stdout)
	}
	e.waitRunning(t, ns, 5, 2*time.Minute)
	claims := e.claims(t, "walkthrough")
	if len(claims) == 0 {
		t.Fatal("5 pods Running but no NodeClaim of NodePool walkthrough")
	}
	t.Logf("walkthrough: 5 pods Running %s after the scale, on %d NodeClaim(s), the first %s %s", time.Since(start).Round(time.Second), len(claims),
		claims[0].Status.InstanceType, claims[0].Status.CapacityType)

	run(commands[2]) // scale to 0
	scaled := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return len(e.claims(t, "walkthrough")) == 0 && len(e.simNodes(t)) == 0, nil
	})
	if err != nil {
		t.Fatalf("scaled to 0: %d NodeClaims and %d nodes left after %s, want none (consolidateAfter 10s)",
			len(e.claims(t, "walkthrough")), len(e.simNodes(t)), time.Since(scaled).Round(time.Second))
	}
	t.Logf("walkthrough: scaled to 0, the node went in %s", time.Since(scaled).Round(time.Second))
}
