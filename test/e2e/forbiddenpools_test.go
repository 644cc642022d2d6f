package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestExplainWithoutNodePoolAccess runs live explain as a user whose
// ClusterRole reads everything the plugin reads but rightsize.dev
// NodePools, on a cluster that has one: explain plans (exit 0) with the
// default pool, says so in one warning line that names the verb, the
// resource and the RBAC to ask for, and marks the plan (the notice under
// it; defaultPool and nodePoolsUnread in JSON). The admin, who may list
// NodePools, gets the cluster's pool: the default pool is planned only
// for want of reading.
func TestExplainWithoutNodePoolAccess(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	c := e.Client()
	team := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "team"},
			Requirements: []v1alpha1.NodeSelectorRequirement{req(v1alpha1.LabelCapacityType, cloud.CapacityTypeSpot), req(solver.LabelInstanceType, "m5.large")},
		}}},
	}
	if err := e.c.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("web", 2, "500m", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, "web", 2, unschedulable)

	const user = "jane"
	read := []string{"get", "list", "watch"} // explain lists; the TUI watches
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "rightsize-reader-but-nodepools"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "persistentvolumeclaims", "persistentvolumes"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses", "csinodes"}, Verbs: read},
		{APIGroups: []string{v1alpha1.Group}, Resources: []string{"nodeclaims", "ec2nodeclasses", "simnodeclasses"}, Verbs: read},
	}}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("the admin plans the cluster's pool", func(t *testing.T) {
		r := plugin(t, e.Kubeconfig, "explain", "-o", "json")
		p := decodePlan(t, r)
		if p.DefaultPool != "" || len(p.Scope.NodePoolsUnread) > 0 || len(p.Nodes) == 0 || p.Nodes[0].NodePool != team.Name {
			t.Errorf("want nodes of pool %s, no default pool, nothing unread: %s", team.Name, r.stdout)
		}
	})

	wantWarning := `Warning: cannot list nodepools.rightsize.dev at cluster scope: user "jane" is forbidden; ask for "list" on "nodepools.rightsize.dev" (RBAC); ` +
		"no NodePool could be read, so the plan uses the default pool, not the cluster's NodePools"
	t.Run("a user who may not list NodePools is warned, in one line", func(t *testing.T) {
		r := plugin(t, e.Kubeconfig, "explain", "--as", user)
		if code := exitCode(t, r.err); code != 0 {
			t.Fatalf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", code, r.stdout, r.stderr)
		}
		var warnings []string
		for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			if strings.Contains(l, "nodepools") {
				warnings = append(warnings, l)
			}
		}
		if len(warnings) != 1 || warnings[0] != wantWarning {
			t.Errorf("stderr's lines on NodePools: %q\nwant the one line %q\nstderr:\n%s", warnings, wantWarning, r.stderr)
		}
		for _, want := range []string{
			"NodePool: none could be read (you may not list nodepools.rightsize.dev); planned with Karpenter's recommended general-purpose NodePool",
			"Plan:      a new ",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
		t.Logf("%s", warnings)
	})

	// The TUI's informers skip what the user may not list (an informer on
	// it would never sync, and the TUI never plan) and plan as explain.
	t.Run("the TUI plans for the same user as explain does", func(t *testing.T) {
		term := startTerminal(t, e.Kubeconfig, 160, 40, "tui", "--as", user)
		screen := term.waitFor(60*time.Second, "you may not list nodepools.rightsize.dev", "Deployment/web")
		term.keys("Enter")
		screen = term.waitFor(30*time.Second, "NodePool: none could be read (you may not list nodepools.rightsize.dev); planned with Karpenter's recommended")
		term.keep("forbidden-pools", screen)
		term.keys("q")
		term.waitFor(10*time.Second, "EXITED 0")
	})

	t.Run("-o json marks the plan as the default pool's", func(t *testing.T) {
		r := plugin(t, e.Kubeconfig, "explain", "--as", user, "-o", "json", "--exit-code")
		if code := exitCode(t, r.err); code != 0 {
			t.Fatalf("exit status %d, want 0 (every pod placed)\nstderr:\n%s", code, r.stderr)
		}
		if !strings.Contains(r.stderr, wantWarning) {
			t.Errorf("stderr lacks the warning:\n%s", r.stderr)
		}
		p := decodePlan(t, r)
		if p.DefaultPool == "" || strings.Join(p.Scope.NodePoolsUnread, ",") != "nodepools.rightsize.dev" {
			t.Errorf("defaultPool %q, nodePoolsUnread %q: want the default pool and nodepools.rightsize.dev", p.DefaultPool, p.Scope.NodePoolsUnread)
		}
		for _, n := range p.Nodes {
			if n.NodePool != "default" {
				t.Errorf("node %s of pool %q, want the default pool only", n.Name, n.NodePool)
			}
		}
	})
}
