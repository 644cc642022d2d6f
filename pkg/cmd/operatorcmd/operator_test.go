package operatorcmd

import (
	"context"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
)

func TestNewCmdOperatorParsesIntoOptions(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantRegionSet bool
		wantErr       string
		// wantLease is the lease duration, renew deadline and retry
		// period parsed (controller-runtime's defaults when zero).
		wantLease [3]time.Duration
	}{
		{"the root's kubeconfig flags", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "sim"}, false, "", [3]time.Duration{}},
		{"an explicit region", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "aws", "--cluster-name", "prod", "--region", "eu-west-1"}, true, "", [3]time.Duration{}},
		{"aws without a cluster name", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "aws", "--region", "eu-west-1"}, true,
			"--cluster-name is required with --cloud aws", [3]time.Duration{}},
		{"aws without a cluster name is told before a missing kubeconfig", []string{"--kubeconfig", "../testdata/missing", "--cloud", "aws"}, false,
			"--cluster-name is required with --cloud aws", [3]time.Duration{}},
		{"aws with an empty cluster name", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "aws", "--cluster-name="}, false,
			"--cluster-name is required with --cloud aws", [3]time.Duration{}},
		{"the interruption queue is for aws", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "sim", "--interruption-queue", "q"}, false,
			"--interruption-queue is for --cloud aws", [3]time.Duration{}},
		{"a missing kubeconfig", []string{"--kubeconfig", "../testdata/missing"}, false, "loading the kubeconfig: ", [3]time.Duration{}},
		{"an unknown log level", []string{"--kubeconfig", "../testdata/kubeconfig", "--log-level", "trace"}, false, `--log-level "trace": want debug, info or error`, [3]time.Duration{}},
		{"batches", []string{"--kubeconfig", "../testdata/kubeconfig", "--batch-idle", "20s", "--batch-max", "10s"}, false, "--batch-idle (20s) must be positive and at most --batch-max (10s)", [3]time.Duration{}},
		{"lease timings for a 30 s outage", []string{"--kubeconfig", "../testdata/kubeconfig", "--leader-elect-lease-duration", "60s",
			"--leader-elect-renew-deadline", "40s", "--leader-elect-retry-period", "5s"}, false, "", [3]time.Duration{time.Minute, 40 * time.Second, 5 * time.Second}},
		{"a renew deadline past the lease", []string{"--kubeconfig", "../testdata/kubeconfig", "--leader-elect-renew-deadline", "20s"}, false,
			"--leader-elect-lease-duration (15s) must be more than --leader-elect-renew-deadline (20s)", [3]time.Duration{}},
		{"a retry period too close to the renew deadline", []string{"--kubeconfig", "../testdata/kubeconfig", "--leader-elect-retry-period", "9s"}, false,
			"--leader-elect-renew-deadline (10s) must be more than 1.2 times --leader-elect-retry-period (9s)", [3]time.Duration{}},
		{"no retry period", []string{"--kubeconfig", "../testdata/kubeconfig", "--leader-elect-retry-period", "0s"}, false,
			"--leader-elect-retry-period (0s) must be positive", [3]time.Duration{}},
		{"timings unchecked without leader election", []string{"--kubeconfig", "../testdata/kubeconfig", "--leader-elect=false", "--leader-elect-retry-period", "0s"}, false,
			"", [3]time.Duration{15 * time.Second, 10 * time.Second, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, _, _ := genericiooptions.NewTestIOStreams()
			config := genericclioptions.NewConfigFlags(false)
			var got *OperatorOptions
			cmd := NewCmdOperator(streams, config, func(_ context.Context, o *OperatorOptions) error { got = o; return nil })
			config.AddFlags(cmd.PersistentFlags())
			cmd.SetArgs(tc.args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if cmdtest.WantErr(t, err, tc.wantErr) {
				return
			}
			want := tc.wantLease
			if want == ([3]time.Duration{}) {
				want = [3]time.Duration{15 * time.Second, 10 * time.Second, 2 * time.Second}
			}
			if lease := [3]time.Duration{got.Operator.LeaseDuration, got.Operator.RenewDeadline, got.Operator.RetryPeriod}; lease != want {
				t.Errorf("lease timings %v, want %v", lease, want)
			}
			wantCluster := "rightsize"
			if got.Provider.Cloud == "aws" {
				wantCluster = "prod"
			}
			if got.Provider.ClusterName != wantCluster {
				t.Errorf("cluster name %q, want %q", got.Provider.ClusterName, wantCluster)
			}
			if got.Kubeconfig != "../testdata/kubeconfig" || got.restConfig == nil || got.restConfig.Host != "https://127.0.0.1:1" || got.RegionSet != tc.wantRegionSet {
				t.Errorf("parsed %+v", got)
			}
		})
	}
}

// TestNewCmdOperatorBindsEachPackagesOptions checks that every flag lands
// in the options of the package it belongs to, negated flags included, and
// what the defaults are there.
func TestNewCmdOperatorBindsEachPackagesOptions(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(o *OperatorOptions) bool
	}{
		{"defaults", nil, func(o *OperatorOptions) bool {
			op := o.Operator
			return op.LeaderElect && op.LeaderElectionID == "rightsize-operator" && op.MetricsBindAddress == ":8080" &&
				op.Provisioning.BatchIdle == time.Second && op.Provisioning.BatchHold == 10*time.Second && op.Provisioning.BatchMax == 2*time.Minute &&
				op.Provisioning.LaunchPricePremium == -1 && op.Provisioning.MinValuesPolicy == "Strict" && op.Provisioning.Region == "us-east-1" &&
				op.Lifecycle.GangWait == 10*time.Second && !op.Lifecycle.NoNominations && !op.Lifecycle.SkipSpreadNominations &&
				op.GarbageCollection.GracePeriod == time.Minute && !op.Repair.Disabled && op.Repair.Toleration == 0 &&
				!op.Disruption.Disabled && op.Disruption.Interval == 5*time.Minute && op.Disruption.ValidationDelay == 15*time.Second &&
				op.Disruption.DrainTimeout == 5*time.Minute && op.Disruption.ReplacementTimeout == 10*time.Minute && !op.Disruption.AllowUncontrolled &&
				o.Provider.Cloud == "sim" && o.Provider.Region == "us-east-1" && o.Interruption.Queue == "" && o.KubeClientQPS == 200 && o.KubeClientBurst == 300
		}},
		{"negated flags", []string{"--disruption=false", "--node-repair=false", "--nominate-pods=false", "--nominate-spread-pods=false"}, func(o *OperatorOptions) bool {
			op := o.Operator
			return op.Disruption.Disabled && op.Repair.Disabled && op.Lifecycle.NoNominations && op.Lifecycle.SkipSpreadNominations
		}},
		{"a negated flag alone is true", []string{"--disruption"}, func(o *OperatorOptions) bool { return !o.Operator.Disruption.Disabled }},
		{"each package's flags", []string{"--batch-max", "1m", "--gang-wait", "3s", "--gc-grace-period", "2m", "--node-repair-toleration", "5m",
			"--drain-timeout", "1m", "--allow-evicting-uncontrolled-pods", "--min-values-policy", "BestEffort", "--leader-election-id", "x"}, func(o *OperatorOptions) bool {
			op := o.Operator
			return op.Provisioning.BatchMax == time.Minute && op.Lifecycle.GangWait == 3*time.Second && op.GarbageCollection.GracePeriod == 2*time.Minute &&
				op.Repair.Toleration == 5*time.Minute && op.Disruption.DrainTimeout == time.Minute && op.Disruption.AllowUncontrolled &&
				op.Provisioning.MinValuesPolicy == "BestEffort" && op.LeaderElectionID == "x"
		}},
		{"aws without --region leaves the region to the SDK", []string{"--cloud", "aws", "--cluster-name", "prod"}, func(o *OperatorOptions) bool {
			return o.Provider.Region == "" && o.Operator.Provisioning.Region == ""
		}},
		{"aws with --region", []string{"--cloud", "aws", "--cluster-name", "prod", "--region", "eu-west-1", "--interruption-queue", "q"}, func(o *OperatorOptions) bool {
			return o.Provider.Region == "eu-west-1" && o.Operator.Provisioning.Region == "eu-west-1" && o.Interruption.Queue == "q"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, _, _ := genericiooptions.NewTestIOStreams()
			var got *OperatorOptions
			cmd := NewCmdOperator(streams, nil, func(_ context.Context, o *OperatorOptions) error { got = o; return nil })
			cmd.SetArgs(append([]string{"--leader-election-namespace", "ns"}, tc.args...))
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			t.Setenv("KUBECONFIG", "../testdata/kubeconfig")
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !tc.check(got) {
				t.Errorf("parsed operator options %+v, provider %+v", got.Operator, got.Provider)
			}
		})
	}
}
