package aws

import "github.com/prometheus/client_golang/prometheus"

// metrics are the provider's Prometheus metrics.
type metrics struct {
	insufficientCapacity *prometheus.CounterVec
	refreshFailures      *prometheus.CounterVec
	lastRefresh          *prometheus.GaugeVec
	launches             *prometheus.CounterVec
	terminations         prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		insufficientCapacity: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rightsize_aws_insufficient_capacity_total",
			Help: "Offerings (instance type × zone × capacity type) EC2 refused in a fleet request, by error code; each is avoided for a while.",
		}, []string{"instance_type", "zone", "capacity_type", "code"}),
		refreshFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rightsize_aws_refresh_failures_total",
			Help: "Failed refreshes of instance types (types), on-demand prices (on_demand) or spot prices (spot); the last good data is kept.",
		}, []string{"source"}),
		lastRefresh: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rightsize_aws_last_refresh_timestamp_seconds",
			Help: "When instance types (types), on-demand prices (on_demand) or spot prices (spot) were last refreshed successfully.",
		}, []string{"source"}),
		launches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rightsize_aws_instances_launched_total",
			Help: "Instances launched with CreateFleet, by capacity type.",
		}, []string{"capacity_type"}),
		terminations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rightsize_aws_instances_terminated_total",
			Help: "Instances terminated with TerminateInstances.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.insufficientCapacity, m.refreshFailures, m.lastRefresh, m.launches, m.terminations} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
