package e2e

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// kubeconfig writes a kubeconfig for server with a bearer token.
func kubeconfig(t *testing.T, server string, caData []byte, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	if caData == nil {
		cluster.InsecureSkipTLSVerify = true
	}
	cfg.Clusters["c"] = cluster
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// podReader makes a ServiceAccount that may list pods and nothing else —
// in every namespace, or in namespace only when it is set — and returns a
// token for it.
func podReader(t *testing.T, env *testenv.Env, name, namespace string) string {
	t.Helper()
	ctx := context.Background()
	c := env.Client()
	sa, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	if namespace == "" {
		_, err = c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		if err == nil {
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
		}
	} else {
		_, err = c.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		if err == nil {
			_, err = c.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// closedPort returns a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestClusterErrorsAreOneLineWithTheNextStep checks what a user sees when
// the cluster cannot be read: one line on stderr naming what is missing,
// exit status 1, within the request timeout, no stack trace.
func TestClusterErrorsAreOneLineWithTheNextStep(t *testing.T) {
	env := sharedEnv(t).Env
	ca := env.RESTConfig().CAData
	tests := []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
		within     time.Duration
	}{
		{"may list pods but not nodes", kubeconfig(t, env.Host, ca, podReader(t, env, "pod-reader", "")), nil,
			`error: cannot list nodes at cluster scope: user "system:serviceaccount:default:pod-reader" is forbidden; ask for "list" on "nodes" (RBAC)`, 10 * time.Second},
		{"invalid or expired token", kubeconfig(t, env.Host, ca, "expired-token"), nil,
			"error: cannot list pods: the cluster at " + env.Host + " rejected your credentials (401 Unauthorized); they may have expired: log in again or refresh the kubeconfig (--kubeconfig, --context)", 10 * time.Second},
		{"nothing listens", kubeconfig(t, "https://"+closedPort(t), nil, "t"), []string{"--request-timeout", "5s"},
			"connection refused; check that the API server is up and that --kubeconfig/--context point at it", 5 * time.Second},
		{"the server never answers", kubeconfig(t, "https://"+silentServer(t), nil, "t"), []string{"--request-timeout", "2s"},
			"did not answer within 2s; check that it is up and reachable, or raise --request-timeout", 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := plugin(t, tc.kubeconfig, append([]string{"explain"}, tc.args...)...)
			if r.err == nil {
				t.Fatalf("explain succeeded:\n%s", r.stdout)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[0], "error: ") {
				t.Errorf("stderr:\n%s\nwant one line containing %q", r.stderr, tc.want)
			}
			if r.took > tc.within {
				t.Errorf("took %s, want at most %s", r.took, tc.within)
			}
			t.Logf("%s (after %s)", lines[0], r.took.Round(time.Millisecond))
		})
	}

	t.Run("may list pods in one namespace only", func(t *testing.T) {
		ctx := context.Background()
		c := env.Client()
		token := podReader(t, env, "ns-reader", "default")
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
				{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"list"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "node-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ns-reader", Namespace: metav1.NamespaceDefault}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := plugin(t, kubeconfig(t, env.Host, ca, token), "explain")
		if r.err != nil {
			t.Fatalf("explain: %v\n%s", r.err, r.stderr)
		}
		for _, want := range []string{
			`Warning: pods: you may not list pods in every namespace; free room on nodes counts only the pods of namespace "default"`,
			`Warning: cannot list poddisruptionbudgets.policy at cluster scope: user "system:serviceaccount:default:ns-reader" is forbidden`,
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		if !strings.Contains(r.stdout, `Only the pods of namespace "default" could be read.`) {
			t.Errorf("stdout:\n%s", r.stdout)
		}
	})
}
