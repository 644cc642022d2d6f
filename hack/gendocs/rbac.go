package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// rbacDir holds the operator's RBAC: role.yaml is controller-gen's output
// from the +kubebuilder:rbac markers, the rest is written by hand.
const rbacDir = "config/rbac"

// markerDirs are where the +kubebuilder:rbac markers live (the paths
// config/config.go's go:generate passes controller-gen).
var markerDirs = []string{"pkg/operator", "pkg/cloud"}

// roleFiles are the roles the page describes, in its order, with what
// installs get each.
// and the packages whose markers it is generated from (under, but not
// under skip; none for a role written by hand). A reason in why keyed
// group/resource@tag is the role's own, and is taken before the plain one.
var roleFiles = []struct{ file, scope, under, skip, tag string }{
	{"config/rbac/role.yaml", "cluster-wide, every install", "pkg/", "pkg/cloud/sim", ""},
	{"config/sim/role.yaml", "cluster-wide, only `--cloud sim` installs (the `config/sim` component; the chart's `cloud: sim`)", "pkg/cloud/sim", "", "sim"},
	{"config/rbac/leader_election_role.yaml", "in the operator's own namespace (`rightsize-system`; `operator install -n` changes it)", "", "", "leader"},
}

// why says, for each group/resource a role grants, what the operator does
// with it. A rule without an entry fails the generator: every grant has a
// reason on the page.
var why = map[string]string{
	"/events":                              "the disruption controller reads the Warning events of a replacement NodeClaim, to say why its launch failed (list only)",
	"/nodes@sim":                           "the simulated cloud creates the Node object of each instance it launches (a real cloud's kubelet registers its own), and deletes it on termination",
	"/nodes":                               "watches nodes; cordons, taints and labels the nodes it manages (update, patch); deletes the Node of a terminated instance; no create: on a real cloud the kubelet registers the Node",
	"/persistentvolumeclaims":              "plans pods where their volumes are (zone of a bound volume, storage class topology)",
	"/persistentvolumes":                   "plans pods where their volumes are (zone of a bound volume, storage class topology)",
	"/pods":                                "sees pending and running pods; deletes the pods a drain cannot evict once their node's termination grace period is over",
	"/pods/eviction":                       "drains nodes through the Eviction API, which honours PodDisruptionBudgets",
	"/pods/status":                         "patch only, by the lifecycle controller (`pkg/operator/nodeclaim/lifecycle`, `setNominated`): the pods a decision planned onto a new node get `status.nominatedNodeName`, as kube-scheduler sets it after preemption, so that the scheduler keeps their room on that node for them; nothing else in a pod's status is written",
	"/podtemplates":                        "reads the PodTemplates CapacityBuffers and ProvisioningRequests name: the shape of a buffer's room and of a request's gang",
	"autoscaling.x-k8s.io/capacitybuffers": "keeps room for each CapacityBuffer's pods (planned, never created) when the CRD is installed",
	"autoscaling.x-k8s.io/capacitybuffers/status":      "writes each buffer's status.replicas, the PodTemplate read and its Provisioning condition",
	"autoscaling.x-k8s.io/provisioningrequests":        "answers ProvisioningRequests of the classes check-capacity and best-effort-atomic-scale-up (Kueue's) when the CRD is installed",
	"autoscaling.x-k8s.io/provisioningrequests/status": "writes each request's Accepted, Provisioned and Failed conditions and the NodeClaims it launched (provisioningClassDetails)",
	"apps/daemonsets":                    "daemon set pods that every new node will run are planned onto it",
	"apps/replicasets":                   "finds a pending pod's owner, to plan its replicas together",
	"apps/statefulsets":                  "finds a pending pod's owner, to plan its replicas together",
	"batch/jobs":                         "finds a pending pod's owner, to plan its replicas together",
	"events.k8s.io/events":               "records what it decided on pods, nodes and NodeClaims (`kubectl describe`)",
	"karpenter.sh/nodeoverlays":          "reads Karpenter NodeOverlays (prices, capacity) when their CRD is installed",
	"policy/poddisruptionbudgets":        "plans disruption within every PodDisruptionBudget",
	"rightsize.dev/commitments":          "reads the Commitments (Reserved Instances, Savings Plans) to launch the capacity they cover first, to price nodes at what they cost beyond them when consolidating, and to export each one's utilisation, covered and spilled dollars (`rightsize_commitment_*`); an install without the CRD or this grant is asked again every 30 s, and plans and gauges go without them",
	"rightsize.dev/ec2nodeclasses":       "reads the node classes the NodePools point at",
	"rightsize.dev/nodepools":            "reads the NodePools it provisions for",
	"rightsize.dev/simnodeclasses":       "reads the node classes the NodePools point at",
	"rightsize.dev/nodeclaims":           "creates, follows and deletes the NodeClaims it launches",
	"rightsize.dev/nodeclaims/status":    "writes what was launched and its conditions",
	"rightsize.dev/nodepools/status":     "writes each NodePool's node count and resources",
	"rightsize.dev/nodepools/finalizers": "sets owner references with blockOwnerDeletion from NodeClaims to their NodePool",
	"storage.k8s.io/csinodes":            "counts volume attach limits per node",
	"storage.k8s.io/storageclasses":      "plans pods with unbound volumes by their storage class's topology",
	"coordination.k8s.io/leases":         "leader election: reads and renews only its own Lease, `rightsize-operator` (`--leader-election-id`; another id is refused); create cannot be limited by name, so it is granted on any Lease, and a Lease created under another name can then be neither read nor updated",
	"/events@leader":                     "leader election records its transitions as events in its namespace",
}

// role is a Role or ClusterRole.
type role struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Rules []struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
		Verbs         []string `json:"verbs"`
	} `json:"rules"`
}

// rbacPages renders docs/reference/rbac.md from the roles in config/,
// naming for each rule the packages whose markers ask for it and why.
func rbacPages(root string) (map[string][]byte, error) {
	askers, err := rbacMarkers(root)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, generatedHeader, "config/rbac, config/sim and the +kubebuilder:rbac markers in "+strings.Join(markerDirs, " and "))
	b.WriteString("# RBAC reference\n\n")
	b.WriteString("Every verb the operator's ServiceAccount, `rightsize-operator`, is granted, and why; it\n")
	b.WriteString("is granted nothing else (the e2e test `TestOperatorRBAC` compares `kubectl auth can-i\n")
	b.WriteString("--list` as that ServiceAccount with this page). The ClusterRoles are generated by\n")
	b.WriteString("controller-gen from the `+kubebuilder:rbac` markers of the controllers and of the cloud\n")
	b.WriteString("providers they drive (`make generate`); \"asked for by\" names the packages whose markers\n")
	b.WriteString("grant each rule. Per cloud: only the simulated cloud creates Node objects, so only a\n")
	b.WriteString("`--cloud sim` install gets node `create`; no install may write `nodes/status`. Besides\n")
	b.WriteString("these, like every authenticated identity, it has the API server's default RBAC: discovery\n")
	b.WriteString("URLs, reviews of its own access, and reading ClusterTrustBundles (public CA certificates).\n")
	b.WriteString("The plugin itself (`explain`, `tui`) needs only read access: see\n")
	b.WriteString("[Planning](../concepts/planning.md#permissions-the-plugin-needs).\n")
	for _, rf := range roleFiles {
		data, err := os.ReadFile(filepath.Join(root, rf.file))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", rf.file, err)
		}
		var r role
		if err := yaml.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", rf.file, err)
		}
		fmt.Fprintf(&b, "\n## %s `%s`\n\n", r.Kind, r.Metadata.Name)
		fmt.Fprintf(&b, "From [`%s`](../../%s), %s.\n\n", rf.file, rf.file, rf.scope)
		b.WriteString("| API group | resources | verbs | why | asked for by |\n|---|---|---|---|---|\n")
		for _, rule := range r.Rules {
			var by, reasons []string
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						for _, pkg := range askers[g+"/"+res+"/"+v] {
							if rf.under != "" && strings.HasPrefix(pkg, rf.under) && (rf.skip == "" || !strings.HasPrefix(pkg, rf.skip)) {
								by = append(by, pkg)
							}
						}
					}
					k := g + "/" + res
					reason, ok := why[k+"@"+rf.tag]
					if !ok {
						reason, ok = why[k]
					}
					if !ok {
						return nil, fmt.Errorf("%s grants %s with no reason: add one to why in hack/gendocs/rbac.go", rf.file, k)
					}
					if !slices.Contains(reasons, reason) {
						reasons = append(reasons, reason)
					}
				}
			}
			slices.Sort(by)
			by = slices.Compact(by)
			asked := "written by hand"
			if len(by) > 0 {
				asked = "`" + strings.Join(by, "`, `") + "`"
			}
			groups := make([]string, len(rule.APIGroups))
			for i, g := range rule.APIGroups {
				if g == "" {
					g = "core"
				}
				groups[i] = "`" + g + "`"
			}
			res := "`" + strings.Join(rule.Resources, "`, `") + "`"
			if len(rule.ResourceNames) > 0 {
				res += " (only `" + strings.Join(rule.ResourceNames, "`, `") + "`)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", strings.Join(groups, ", "), res, strings.Join(rule.Verbs, ", "), strings.Join(reasons, "; "), asked)
		}
	}
	return map[string][]byte{referenceDir + "/rbac.md": []byte(b.String())}, nil
}

// rbacMarkers maps "group/resource/verb" to the packages (directories
// relative to root) whose +kubebuilder:rbac markers ask for it.
func rbacMarkers(root string) (map[string][]string, error) {
	askers := map[string][]string{}
	for _, dir := range markerDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			pkg, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			pkg = filepath.ToSlash(pkg)
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				spec, ok := strings.CutPrefix(line, "// +kubebuilder:rbac:")
				if !ok {
					continue
				}
				var groups, resources, verbs []string
				for _, kv := range strings.Split(spec, ",") {
					k, v, _ := strings.Cut(kv, "=")
					vals := strings.Split(strings.Trim(v, `"`), ";")
					switch k {
					case "groups":
						groups = vals
					case "resources":
						resources = vals
					case "verbs":
						verbs = vals
					}
				}
				for _, g := range groups {
					for _, r := range resources {
						for _, v := range verbs {
							key := g + "/" + r + "/" + v
							if !slices.Contains(askers[key], pkg) {
								askers[key] = append(askers[key], pkg)
							}
						}
					}
				}
			}
			if err := sc.Err(); err != nil {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the RBAC markers under %s: %w", dir, err)
		}
	}
	return askers, nil
}
