package explain

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// runLive reads the cluster, plans for every pending pod and prints the
// report for the namespace (or all) and workload asked for.
func (o *Options) runLive(ctx context.Context) error {
	clients, err := snapshot.NewClusterClients(o.RESTConfig)
	if err != nil {
		return err
	}
	scope := o.Namespace
	if o.AllNamespaces {
		scope = ""
	}
	cl, err := readCluster(ctx, clients, snapshot.ClusterOptions{
		Namespace: scope,
		Host:      o.RESTConfig.Host,
		Timeout:   o.RESTConfig.Timeout,
	})
	if err != nil {
		return err
	}
	o.warn(cl.Warnings)
	if o.Catalog.Region == "" {
		o.Catalog.Region = cl.Region()
		if o.Catalog.Region == "" {
			o.Catalog.Region = plan.DefaultRegion
		}
	}
	types, source, err := o.instanceTypes()
	if err != nil {
		return err
	}
	// In-flight NodeClaims are capacity already launching: the plan uses
	// them first, as the TUI and the operator do.
	in := plan.Input{Cluster: cl, InstanceTypes: types, Catalog: &o.Catalog, Default: &o.Default}
	built, err := plan.Build(in)
	if err != nil {
		return err
	}
	p := built.Problem
	o.warn(plan.WindowsPools(p))
	o.warn(built.Overlays)
	solved, err := o.solve(ctx, p)
	if err != nil {
		return err
	}
	solved, spent, err := o.spend(ctx, p, solved, &cl.Manifests, source)
	if err != nil {
		return err
	}
	rep := report.FromPlan(p, solved, built.InFlight)
	result := o.newResult(rep, source)
	result.Buffers = newBuffers(p, solved, built.Buffers)
	setCommitments(result, spent)
	setDefaults(result, built)
	var flags map[int]*plan.Widening
	if built.DefaultPool != "" {
		// Pods left undiagnosed at the deadline still get the flag that
		// would place them, as explain -f gives it.
		if flags, err = notDiagnosedFlags(ctx, in, p, solved); err != nil {
			return err
		}
	}
	live, err := newLiveResult(cl, built, rep, flags, scope, o.target)
	if err != nil {
		return err
	}
	if o.Consolidation {
		p.Options.Deadline = o.workDeadline(len(p.Pods))
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consolidation: %w", err)
		}
		if err := rep.Consolidate(cl, built, time.Now()); err != nil {
			return err
		}
		live.Consolidation = rep.Consolidation
	}
	result.LiveResult = live
	return o.print(result)
}

// workload is a parsed POD, pod/NAME or TYPE/NAME argument.
type workload struct {
	Kind, Name string
}

// String returns "Kind/name".
func (w *workload) String() string { return w.Kind + "/" + w.Name }

// workloadKinds maps what kubectl users type to kinds.
var workloadKinds = map[string]string{
	"pod": "Pod", "pods": "Pod", "po": "Pod",
	"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
	"statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
	"daemonset": "DaemonSet", "daemonsets": "DaemonSet", "ds": "DaemonSet",
	"replicaset": "ReplicaSet", "replicasets": "ReplicaSet", "rs": "ReplicaSet",
	"replicationcontroller": "ReplicationController", "replicationcontrollers": "ReplicationController", "rc": "ReplicationController",
	"job": "Job", "jobs": "Job",
	"cronjob": "CronJob", "cronjobs": "CronJob", "cj": "CronJob",
}

// parseWorkload reads "NAME", "pod/NAME" or "TYPE[.GROUP]/NAME".
// CheckWorkload reports whether s names a workload explain can narrow its
// report to: POD, pod/NAME or TYPE/NAME (deployment/web).
func CheckWorkload(s string) error {
	_, err := parseWorkload(s)
	return err
}

func parseWorkload(s string) (*workload, error) {
	typ, name, ok := strings.Cut(s, "/")
	if !ok {
		typ, name = "pod", s
	}
	typ, _, _ = strings.Cut(strings.ToLower(typ), ".") // deployment.apps
	kind, known := workloadKinds[typ]
	switch {
	case name == "" || strings.Contains(name, "/"):
		return nil, fmt.Errorf("%q: want POD, pod/NAME or TYPE/NAME (e.g. deployment/web)", s)
	case !known:
		return nil, fmt.Errorf("%q: unknown workload type %q; want pod, deployment, statefulset, daemonset, replicaset, replicationcontroller, job or cronjob", s, typ)
	}
	return &workload{Kind: kind, Name: name}, nil
}

// cronJobSuffix is the scheduled-time suffix of a CronJob's Job names.
var cronJobSuffix = regexp.MustCompile(`^-\d+$`)

// matches reports whether a pod named name with owner ("Kind/name") belongs
// to the workload.
func (w *workload) matches(name, owner string) bool {
	kind, ownerName, _ := strings.Cut(owner, "/")
	switch w.Kind {
	case "Pod":
		return name == w.Name
	case "CronJob":
		return kind == "Job" && strings.HasPrefix(ownerName, w.Name) && cronJobSuffix.MatchString(ownerName[len(w.Name):])
	}
	return kind == w.Kind && ownerName == w.Name
}

// newLiveResult builds the live part of the report: pending pods in scope
// with what the plan does for them, the existing nodes and their cost.
// flags (from notDiagnosedFlags, by pod index) names the widening that
// would place a pod the solver did not diagnose.
func newLiveResult(cl *snapshot.Cluster, built *plan.Result, rep *report.Report, flags map[int]*plan.Widening, namespace string, target *workload) (*LiveResult, error) {
	p, solved := rep.Problem, rep.Plan
	live := &LiveResult{
		Scope: ResultScope{Namespace: namespace, PendingInCluster: len(cl.Pending), PodNamespace: cl.PodNamespace,
			NodePoolsUnread: cl.UnreadNodePools},
		Pending:       []ResultPending{},
		ExistingNodes: []ResultExistingNode{},
	}
	if target != nil {
		live.Scope.Workload = target.String()
	}
	inScope := func(ns, name, owner string) bool {
		return (namespace == "" || ns == namespace) && (target == nil || target.matches(name, owner))
	}

	// What the plan does with each planned pod.
	targetNodes := map[string]bool{}
	for i := range cl.Pending {
		pp := &cl.Pending[i]
		if !inScope(pp.Namespace, pp.Name, pp.Owner) {
			continue
		}
		rp := ResultPending{Pod: pp.Key(), Owner: pp.Owner, SchedulerReason: pp.SchedulerReason, SchedulerMessage: pp.SchedulerMessage}
		if pp.Index < 0 {
			rp.Reason = pp.NotPlanned
			live.Pending = append(live.Pending, rp)
			continue
		}
		switch o := &rep.Outcomes[pp.Index]; o.Kind {
		case report.OutcomeNew:
			n := &solved.NewNodes[o.NewNode]
			rp.Node, rp.NewNode = plan.NewNodeName(o.NewNode), true
			rp.InstanceType, rp.CapacityType, rp.Zone, rp.PricePerHour = n.InstanceType, n.CapacityType, n.Zone, n.Price
		case report.OutcomeLaunching:
			rp.Node, rp.Note = o.Node, o.Reason
		case report.OutcomeExisting:
			rp.Node, rp.Note = o.Node, o.Reason
			targetNodes[rp.Node] = true
		default:
			rp.Reason = withPlacingFlag(o.Reason, flags[pp.Index])
		}
		live.Pending = append(live.Pending, rp)
	}
	running := 0
	for i := range cl.Scheduled {
		s := &cl.Scheduled[i]
		if target != nil && inScope(s.Namespace, s.Name, s.Owner) {
			targetNodes[s.Node] = true
			running++
		}
	}
	live.Scope.Running = running
	if target != nil && running == 0 && len(live.Pending) == 0 {
		where := fmt.Sprintf("in namespace %q", namespace)
		if namespace == "" {
			where = "in any namespace"
		}
		return nil, fmt.Errorf("no pods of %s %s; check the name, or use -n NAMESPACE or -A", strings.ToLower(target.Kind)+"/"+target.Name, where)
	}

	// Existing nodes: all of them, or those the workload runs or would run on.
	priced := 0
	for i := range cl.Nodes {
		n := &p.Nodes[i] // priced by plan.Build; the in-flight nodes follow
		price, known := built.Prices.Node(n)
		if known {
			priced++
			live.ClusterPricePerHour += price
		}
		if target != nil && !targetNodes[n.Name] {
			continue
		}
		en := ResultExistingNode{
			Name: n.Name, InstanceType: n.InstanceType, CapacityType: n.CapacityType, Zone: n.Zone, NodePool: n.Pool,
			Allocatable: report.Quantities(p, n.Allocatable), Requested: report.Quantities(p, n.Requested),
			Pods: int(n.Requested[solver.Pods]), Cordoned: n.Unschedulable, Initializing: n.InFlight,
			Usage: report.NewUsage(n.Requested, n.Allocatable),
		}
		if known {
			en.PricePerHour = &price
		}
		live.ExistingNodes = append(live.ExistingNodes, en)
	}
	sort.Slice(live.ExistingNodes, func(a, b int) bool { return live.ExistingNodes[a].Name < live.ExistingNodes[b].Name })
	live.ClusterPricePerHour = round4(live.ClusterPricePerHour)
	live.ClusterPricePerMonth = round2(live.ClusterPricePerHour * plan.HoursPerMonth)
	live.ClusterNodes, live.PricedNodes = len(cl.Nodes), priced
	return live, nil
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }
