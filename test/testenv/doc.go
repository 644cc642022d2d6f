// Package testenv starts a real, local Kubernetes control plane for tests:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// (which plays the kubelets of fake nodes). Behaviour tests talk to it through
// client-go or the built kubectl exactly as they would to a real cluster: the
// real scheduler binds pods, the real controller-manager runs Deployments,
// ReplicaSets, PDB status, service accounts and node lifecycle.
//
// # Binaries and cache layout
//
// The binaries are built once from the Go module proxy by `make testenv`
// (hack/testenv/build.sh) into a cache outside the repository, keyed by the
// Kubernetes version:
//
//	${RIGHTSIZE_TESTENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rightsize/testenv/v1.37.2}/
//	  bin/    kube-apiserver kube-controller-manager kube-scheduler kubectl  (k8s.io/kubernetes v1.37.2)
//	          etcd (go.etcd.io/etcd v3.6.10), kwok (sigs.k8s.io/kwok v0.8.0)
//	  src/    the throwaway modules they were built from
//	  stamp   the versions in bin/
//
// A cold build takes about 15-25 minutes on 2 cores; afterwards it is a no-op.
// When a binary is missing, [Start] fails the test naming the binary and
// `make testenv`; it never skips.
//
// # Why the processes are started directly, not with kwokctl
//
// kwokctl (--runtime binary) can start the same binaries, but in v0.8.0 it
// exits 0 even when the cluster never becomes ready, writes to ~/.kube/config
// unless told otherwise, mishandles --extra-args for more than one component,
// lets kwok manage every node and bind 0.0.0.0 by default, and wants kubectl on
// PATH or tries to download one. Starting five processes directly is a few
// dozen lines more and leaves nothing implicit: every component binds only
// 127.0.0.1 on ports picked free for this Env (the controller-manager and
// scheduler serve no ports at all), all state — certificates, keys,
// kubeconfigs, etcd data and one log file per component — lives in a private
// temporary directory, readiness is checked by polling /readyz and waiting for
// the "default" ServiceAccount, and teardown (SIGTERM, then SIGKILL after a
// grace period) always runs through t.Cleanup. On Linux the components also
// get SIGKILL if the test binary dies without cleaning up.
//
// Security is the simplest real setup: a throwaway CA signs the apiserver's
// serving certificate and one client certificate per component; the
// apiserver runs with --authorization-mode=Node,RBAC; the admin kubeconfig
// ([Env.Kubeconfig]) is in system:masters; the controller-manager mints
// service-account tokens with a generated key pair and runs each controller
// with its own service account (--use-service-account-credentials), so RBAC
// behaves as on a kubeadm cluster.
//
// Only nodes annotated kwok.x-k8s.io/node=fake are managed by kwok (kwok runs
// with --manage-all-nodes=false); [Env.AddNode] creates such nodes, and
// anything else (e.g. a simulated cloud provider) can do the same with
// [NodeAnnotation].
//
// Set RIGHTSIZE_TESTENV_KEEP=1 to keep the temporary directory (logs, etcd
// data, kubeconfig) after the test; its path is logged. Set
// RIGHTSIZE_TESTENV_SCHEDULER_V=3 to have kube-scheduler log every
// scheduling attempt and every nomination it sets or clears.
package testenv
