package aws

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

func testBootstrap() bootstrap {
	return bootstrap{
		ClusterName: "prod", ClusterEndpoint: "https://api.example.com", ClusterCABundle: "Q0EK", ServiceCIDR: "10.100.0.0/16",
		Labels:  map[string]string{"team": "platform", "rightsize.dev/nodepool": "default", "kubernetes.io/arch": "amd64", "node.kubernetes.io/role": "worker"},
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "rightsize.dev/unregistered", Effect: corev1.TaintEffectNoExecute}},
		MaxPods: 29,
	}
}

func TestUserDataJoinsTheClusterPerFamily(t *testing.T) {
	tests := []struct {
		family  string
		custom  string
		want    []string
		wantNot []string
	}{
		{family: FamilyAL2023, custom: "#!/bin/bash\necho hi", want: []string{
			"Content-Type: multipart/mixed", "Content-Type: application/node.eks.aws", "kind: NodeConfig", "name: prod",
			"apiServerEndpoint: https://api.example.com", "certificateAuthority: Q0EK", "cidr: 10.100.0.0/16", "maxPods: 29",
			"--node-labels=node.kubernetes.io/role=worker,rightsize.dev/nodepool=default,team=platform",
			`{key: dedicated, value: "gpu", effect: NoSchedule}`, "text/x-shellscript", "echo hi",
		}, wantNot: []string{"kubernetes.io/arch=amd64"}},
		{family: FamilyAL2, want: []string{
			"/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint 'https://api.example.com' --b64-cluster-ca 'Q0EK'",
			"--max-pods=29", "--register-with-taints=dedicated=gpu:NoSchedule,rightsize.dev/unregistered:NoExecute",
		}},
		{family: FamilyBottlerocket, custom: "[settings.host-containers.admin]\nenabled = true", want: []string{
			`settings.kubernetes.cluster-name = "prod"`, `settings.kubernetes.api-server = "https://api.example.com"`,
			`settings.kubernetes.max-pods = 29`, `settings.kubernetes.node-labels."team" = "platform"`,
			`settings.kubernetes.node-taints."dedicated" = ["gpu:NoSchedule"]`, "[settings.host-containers.admin]",
		}},
		{family: FamilyCustom, custom: "my own bootstrap", want: []string{"my own bootstrap"}, wantNot: []string{"prod"}},
	}
	for _, tc := range tests {
		t.Run(tc.family, func(t *testing.T) {
			b := testBootstrap()
			b.Custom = tc.custom
			enc, err := b.UserData(tc.family)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(raw), w) {
					t.Errorf("user data lacks %q:\n%s", w, raw)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(string(raw), w) {
					t.Errorf("user data has %q:\n%s", w, raw)
				}
			}
		})
	}
}

func TestUserDataRefusesInputsThatBreakQuoting(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*bootstrap)
	}{
		{"cluster name with a quote", func(b *bootstrap) { b.ClusterName = "prod'; rm -rf /" }},
		{"endpoint not https", func(b *bootstrap) { b.ClusterEndpoint = "http://api" }},
		{"endpoint with a quote", func(b *bootstrap) { b.ClusterEndpoint = "https://a'b" }},
		{"CA not base64", func(b *bootstrap) { b.ClusterCABundle = "not base64!" }},
		{"label value with a newline", func(b *bootstrap) { b.Labels = map[string]string{"a": "b\nc"} }},
		{"label key with a quote", func(b *bootstrap) { b.Labels = map[string]string{`a"b`: "c"} }},
		{"taint effect", func(b *bootstrap) { b.Taints = []corev1.Taint{{Key: "a", Effect: "Never"}} }},
		{"service CIDR", func(b *bootstrap) { b.ServiceCIDR = "10.0.0.0/16\nx" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testBootstrap()
			tc.mutate(&b)
			if _, err := b.UserData(FamilyAL2023); err == nil {
				t.Error("accepted")
			}
		})
	}
	if _, err := (&bootstrap{ClusterName: "x"}).UserData("Windows2022"); err == nil {
		t.Error("rendered user data for an unknown family")
	}
}

// FuzzUserData checks that whatever the labels, taints and cluster
// settings, rendering never panics, and that accepted values cannot break
// out of the shell, TOML and YAML quoting they are put in.
func FuzzUserData(f *testing.F) {
	f.Add("prod", "https://api.example.com", "team", "platform", "dedicated", "gpu", "NoSchedule")
	f.Add("p'r", "https://x", "a\"b", "c\nd", "k", "v", "NoExecute")
	f.Add("c", "https://e", "example.com/x", "", "t", "", "PreferNoSchedule")
	f.Fuzz(func(t *testing.T, cluster, endpoint, lk, lv, tk, tv, effect string) {
		b := bootstrap{ClusterName: cluster, ClusterEndpoint: endpoint, ClusterCABundle: "Q0EK", ServiceCIDR: "10.100.0.0/16",
			Labels: map[string]string{lk: lv}, Taints: []corev1.Taint{{Key: tk, Value: tv, Effect: corev1.TaintEffect(effect)}}, MaxPods: 110}
		for _, family := range []string{FamilyAL2023, FamilyAL2, FamilyBottlerocket} {
			enc, err := b.UserData(family)
			if err != nil {
				continue
			}
			for _, s := range []string{cluster, endpoint, lk, lv, tk, tv} {
				if strings.ContainsAny(s, "'\"\\\n\r`$") {
					t.Fatalf("%s: accepted %q, which could break quoting", family, s)
				}
			}
			if _, err := base64.StdEncoding.DecodeString(enc); err != nil {
				t.Fatalf("%s: not base64: %v", family, err)
			}
		}
	})
}

func FuzzParsePriceListItem(f *testing.F) {
	f.Add(`{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"unit":"Hrs","pricePerUnit":{"USD":"0.096"}}}}}}}`)
	f.Add(`{}`)
	f.Add(`{"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"unit":"Hrs","pricePerUnit":{"USD":"-1"}}}}}}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		typ, price, err := parsePriceListItem(doc)
		if err == nil && (price < 0 || (price == 0) != (typ == "" && price == 0)) {
			t.Fatalf("price %v for %q", price, typ)
		}
	})
}

func TestParsePriceListItem(t *testing.T) {
	typ, price, err := parsePriceListItem(`{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"unit":"Hrs","pricePerUnit":{"USD":"0.0960000000"}}}}}}}`)
	if err != nil || typ != "m5.large" || price != 0.096 {
		t.Errorf("got %q %v %v", typ, price, err)
	}
	if _, _, err := parsePriceListItem(`{"product":`); err == nil {
		t.Error("malformed document accepted")
	}
}

func testKubelet() *v1alpha1.KubeletConfiguration {
	return &v1alpha1.KubeletConfiguration{
		MaxPods:                     ptr.To(int32(110)),
		PodsPerCore:                 ptr.To(int32(10)),
		SystemReserved:              map[string]v1alpha1.ReservedQuantity{"cpu": "100m", "memory": "100Mi"},
		KubeReserved:                map[string]v1alpha1.ReservedQuantity{"cpu": "200m", "memory": "1Gi"},
		EvictionHard:                map[string]v1alpha1.EvictionThreshold{"memory.available": "5%", "nodefs.available": "10%"},
		EvictionSoft:                map[string]v1alpha1.EvictionThreshold{"memory.available": "1Gi"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
		EvictionMaxPodGracePeriod:   ptr.To(int32(60)),
		ImageGCHighThresholdPercent: ptr.To(int32(85)),
		ImageGCLowThresholdPercent:  ptr.To(int32(80)),
		CPUCFSQuota:                 ptr.To(false),
		ClusterDNS:                  []string{"10.100.0.10"},
	}
}

func decodedUserData(t *testing.T, b bootstrap, family string) string {
	t.Helper()
	enc, err := b.UserData(family)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestUserDataCarriesKubeletSettings checks that a node class's kubelet
// settings reach the node in each family's own format. MaxPods is the
// planner's figure (maxPods 110 capped by podsPerCore 10 on 2 vCPUs).
func TestUserDataCarriesKubeletSettings(t *testing.T) {
	b := testBootstrap()
	b.MaxPods, b.Kubelet = 20, testKubelet()

	t.Run("AL2023 NodeConfig kubelet config", func(t *testing.T) {
		raw := decodedUserData(t, b, FamilyAL2023)
		start := strings.Index(raw, "apiVersion: node.eks.aws/v1alpha1")
		end := strings.Index(raw[start:], "\n--"+mimeBoundary)
		if start < 0 || end < 0 {
			t.Fatalf("no NodeConfig part:\n%s", raw)
		}
		var nc struct {
			Spec struct {
				Kubelet struct {
					Config map[string]any `json:"config"`
				} `json:"kubelet"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(raw[start:start+end]), &nc); err != nil {
			t.Fatalf("NodeConfig is not YAML: %v\n%s", err, raw[start:start+end])
		}
		got, err := json.Marshal(nc.Spec.Kubelet.Config)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`"maxPods":20`, `"podsPerCore":10`, `"kubeReserved":{"cpu":"200m","memory":"1Gi"}`, `"systemReserved":{"cpu":"100m","memory":"100Mi"}`,
			`"evictionHard":{"memory.available":"5%","nodefs.available":"10%"}`, `"evictionSoft":{"memory.available":"1Gi"}`,
			`"evictionSoftGracePeriod":{"memory.available":"1m30s"}`, `"evictionMaxPodGracePeriod":60`,
			`"imageGCHighThresholdPercent":85`, `"imageGCLowThresholdPercent":80`, `"cpuCFSQuota":false`, `"clusterDNS":["10.100.0.10"]`,
		} {
			if !strings.Contains(string(got), want) {
				t.Errorf("kubelet config %s lacks %s", got, want)
			}
		}
	})
	t.Run("AL2 bootstrap.sh flags", func(t *testing.T) {
		raw := decodedUserData(t, b, FamilyAL2)
		for _, want := range []string{
			"--use-max-pods false --dns-cluster-ip '10.100.0.10' --kubelet-extra-args '--max-pods=20 --pods-per-core=10 " +
				"--system-reserved=cpu=100m,memory=100Mi --kube-reserved=cpu=200m,memory=1Gi " +
				"--eviction-hard=memory.available<5%,nodefs.available<10% --eviction-soft=memory.available<1Gi " +
				"--eviction-soft-grace-period=memory.available=1m30s --eviction-max-pod-grace-period=60 " +
				"--image-gc-high-threshold=85 --image-gc-low-threshold=80 --cpu-cfs-quota=false --node-labels=",
		} {
			if !strings.Contains(raw, want) {
				t.Errorf("user data lacks %q:\n%s", want, raw)
			}
		}
	})
	t.Run("Bottlerocket settings", func(t *testing.T) {
		raw := decodedUserData(t, b, FamilyBottlerocket)
		for _, want := range []string{
			`settings.kubernetes.max-pods = 20`,
			`settings.kubernetes.kube-reserved."memory" = "1Gi"`, `settings.kubernetes.system-reserved."cpu" = "100m"`,
			`settings.kubernetes.eviction-hard."memory.available" = "5%"`, `settings.kubernetes.eviction-soft."memory.available" = "1Gi"`,
			`settings.kubernetes.eviction-soft-grace-period."memory.available" = "1m30s"`,
			`settings.kubernetes.eviction-max-pod-grace-period = 60`, `settings.kubernetes.image-gc-high-threshold-percent = 85`,
			`settings.kubernetes.cpu-cfs-quota-enforced = false`, `settings.kubernetes.cluster-dns-ip = ["10.100.0.10"]`,
		} {
			if !strings.Contains(raw, want) {
				t.Errorf("user data lacks %q:\n%s", want, raw)
			}
		}
	})
	t.Run("values that would break quoting are refused", func(t *testing.T) {
		for _, k := range []*v1alpha1.KubeletConfiguration{
			{KubeReserved: map[string]v1alpha1.ReservedQuantity{"memory": "1Gi' ; curl evil"}},
			{EvictionHard: map[string]v1alpha1.EvictionThreshold{"memory.available\"\nx": "1Gi"}},
			{ClusterDNS: []string{"10.0.0.1' --x"}},
		} {
			b := testBootstrap()
			b.Kubelet = k
			if _, err := b.UserData(FamilyAL2); err == nil {
				t.Errorf("user data made with kubelet %+v; want an error", k)
			}
		}
	})
}
