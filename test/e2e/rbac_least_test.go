//go:build dist

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// grant is one verb on one resource, limited to one object's name or not
// ("").
type grant struct{ group, resource, verb, name string }

// documentedGrants reads the tables of docs/reference/rbac.md: every verb on
// every resource it says the operator's ServiceAccount is granted.
func documentedGrants(t *testing.T) []grant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "reference", "rbac.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []grant
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		field := func(s string) []string {
			var vals []string
			for _, v := range strings.Split(s, ",") {
				vals = append(vals, strings.Trim(strings.TrimSpace(v), "`"))
			}
			return vals
		}
		resCell, names, _ := strings.Cut(cells[2], "(only")
		var name []string
		if names != "" {
			name = field(strings.TrimSuffix(strings.TrimSpace(names), ")"))
		} else {
			name = []string{""}
		}
		for _, g := range field(cells[1]) {
			if g == "core" {
				g = ""
			}
			for _, r := range field(resCell) {
				for _, v := range field(cells[3]) {
					for _, n := range name {
						out = append(out, grant{g, r, v, n})
					}
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("docs/reference/rbac.md: %d grants read; the table format changed", len(out))
	}
	return out
}

// everyoneMay is what the API server's default RBAC gives every
// authenticated identity, the operator included: system:basic-user's
// reviews of itself, and reading ClusterTrustBundles (public CA
// certificates, for pods that mount them). No manifest of ours grants them.
var everyoneMay = []grant{
	{"authorization.k8s.io", "selfsubjectaccessreviews", "create", ""},
	{"authorization.k8s.io", "selfsubjectrulesreviews", "create", ""},
	{"authentication.k8s.io", "selfsubjectreviews", "create", ""},
	{"certificates.k8s.io", "clustertrustbundles", "get", ""},
	{"certificates.k8s.io", "clustertrustbundles", "list", ""},
	{"certificates.k8s.io", "clustertrustbundles", "watch", ""},
}

// checkGrantsAsDocumented asks the API server, as the operator's
// ServiceAccount (kubeconfig kc), what it may do in its own namespace ns and
// in kube-system (SelfSubjectRulesReview: the rules `kubectl auth can-i
// --list` prints), and fails on any verb docs/reference/rbac.md does not
// name, and on any the page names and the server does not grant. Then it
// shows that the Role gives only its own Lease: another Lease in ns can be
// neither read, updated nor deleted, and one the ServiceAccount creates
// (create cannot be limited by name) cannot be read back.
func checkGrantsAsDocumented(t *testing.T, env *testenv.Env, kc, ns string) {
	t.Helper()
	ctx := context.Background()
	docs := documentedGrants(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := kubectlAs(t, env, kc, "auth", "can-i", "--list", "-n", ns); r.err != nil {
		t.Errorf("kubectl auth can-i --list: %v\n%s", r.err, r.stderr)
	} else {
		t.Logf("kubectl auth can-i --list -n %s as the operator:\n%s", ns, r.stdout)
	}
	granted := map[string][]grant{}
	for _, where := range []string{ns, "kube-system"} {
		rev, err := as.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: where}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectRulesReview in %s as the operator: %v", where, err)
		}
		if rev.Status.Incomplete {
			t.Fatalf("SelfSubjectRulesReview in %s is incomplete: %s", where, rev.Status.EvaluationError)
		}
		for _, r := range rev.Status.ResourceRules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						for _, n := range names {
							gr := grant{g, res, v, n}
							if !slices.Contains(docs, gr) && !slices.Contains(everyoneMay, gr) {
								t.Errorf("in %s the operator may %s %s (group %q, name %q): not in docs/reference/rbac.md", where, v, res, g, n)
							}
							granted[where] = append(granted[where], gr)
						}
					}
				}
			}
		}
	}
	for _, d := range docs {
		if !slices.Contains(granted[ns], d) {
			t.Errorf("docs/reference/rbac.md names %s %s (group %q, name %q), which the operator is not granted in %s", d.verb, d.resource, d.group, d.name, ns)
		}
	}
	if slices.ContainsFunc(granted["kube-system"], func(g grant) bool { return g.resource == "leases" }) {
		t.Errorf("the operator has Lease rules in kube-system: %v", granted["kube-system"])
	}
	t.Logf("%d documented grants; the server grants %d (verb, resource, name) in %s and %d in kube-system",
		len(docs), len(granted[ns]), ns, len(granted["kube-system"]))

	// Leases, by real requests.
	admin := env.Client().CoordinationV1().Leases(ns)
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "e2e-someone-elses"}}
	if _, err := admin.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{other.Name, "e2e-created-by-operator", v1alpha1.OperatorLeaseName} {
			_ = admin.Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	leases := as.CoordinationV1().Leases(ns)
	forbidden := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("as the operator, %s: %v, want forbidden", what, err)
		}
	}
	_, err = leases.Get(ctx, other.Name, metav1.GetOptions{})
	forbidden("get another Lease", err)
	holder := "intruder"
	_, err = leases.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: other.Name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.UpdateOptions{})
	forbidden("update another Lease", err)
	forbidden("delete another Lease", leases.Delete(ctx, other.Name, metav1.DeleteOptions{}))
	_, err = leases.List(ctx, metav1.ListOptions{})
	forbidden("list Leases", err)
	if got, err := admin.Get(ctx, other.Name, metav1.GetOptions{}); err != nil || got.Spec.HolderIdentity != nil {
		t.Errorf("another Lease after the operator's attempts: %+v, %v", got, err)
	}
	// Create cannot be limited by name; what it created it cannot touch.
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "e2e-created-by-operator"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("as the operator, create a Lease: %v (the Role grants create on any name)", err)
	}
	_, err = leases.Get(ctx, "e2e-created-by-operator", metav1.GetOptions{})
	forbidden("get a Lease it created under another name", err)
	// Its own Lease it may create, read and renew.
	own, err := leases.Get(ctx, v1alpha1.OperatorLeaseName, metav1.GetOptions{})
	if err != nil {
		own, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.OperatorLeaseName}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("as the operator, its own Lease %s: %v", v1alpha1.OperatorLeaseName, err)
	}
	own.Spec.HolderIdentity = &holder
	if _, err := leases.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("as the operator, update its own Lease: %v", err)
	}
	forbidden("delete its own Lease", leases.Delete(ctx, v1alpha1.OperatorLeaseName, metav1.DeleteOptions{}))
	// Nothing of this in another namespace.
	_, err = as.CoordinationV1().Leases("kube-system").Get(ctx, v1alpha1.OperatorLeaseName, metav1.GetOptions{})
	forbidden("get its Lease's name in kube-system", err)
}
