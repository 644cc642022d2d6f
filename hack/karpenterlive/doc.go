// Command karpenterlive runs Karpenter v1.14.1 (its kwok provider, built
// from the module proxy, see ./karpenter) and kubectl-rightsize's operator
// (the sim cloud) live, each on a test control plane of its own
// (test/testenv: kube-apiserver, scheduler, controller-manager, kwok), on
// the same instance types and the same workloads replayed in time, and
// measures both the same way from the API server. See docs/benchmarks.md,
// "Live against Karpenter".
//
//	make bench-live TRACE=/path/to/openb_pod_list_default.csv
package main
