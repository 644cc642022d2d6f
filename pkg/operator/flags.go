package operator

import "github.com/spf13/pflag"

// AddFlags binds the flags of `kubectl rightsize operator` that o owns to
// it and sets their defaults: leader election, the metrics and probe
// addresses, and, through their own AddFlags, the options of provisioning,
// the NodeClaim lifecycle, garbage collection, repair and disruption. The
// command binds the rest (the cloud, the API client, logging).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader among replicas; only the leader acts")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace in-cluster, else kube-system)")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "name of the leader-election Lease")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long replicas wait after the leader's last renewal before taking the Lease over; controller-runtime's and Karpenter's default")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline, "how long the leader keeps trying to renew its Lease before it gives up leading and exits; an API server outage longer than this ends the process; controller-runtime's and Karpenter's default")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "how often replicas try to acquire or renew the Lease; controller-runtime's and Karpenter's default")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address to serve /metrics on; 0 disables it")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address to serve /healthz and /readyz on; 0 disables it")
	o.Provisioning.AddFlags(fs)
	o.Lifecycle.AddFlags(fs)
	o.GarbageCollection.AddFlags(fs)
	o.Repair.AddFlags(fs)
	o.Disruption.AddFlags(fs)
}
