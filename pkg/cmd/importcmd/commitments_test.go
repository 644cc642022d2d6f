package importcmd

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/sptest"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// TestImportAWSCommitments runs `import --aws-commitments` with the SDK's
// own configuration chain pointed (AWS_ENDPOINT_URL_EC2,
// AWS_ENDPOINT_URL_SAVINGSPLANS) at the in-repo EC2 and Savings Plans
// servers: it prints a Commitment per reservation and plan, which explain
// -f reads back as it reads any manifest.
func TestImportAWSCommitments(t *testing.T) {
	ec2 := ec2test.New("us-east-1")
	ec2.AddReservedInstances(ec2test.ReservedInstances{ID: "ri-0123", InstanceType: "m6i.large", Count: 5, Hourly: 0.06})
	sp := sptest.New()
	sp.AddPlan(sptest.Plan{ID: "plan-1", Type: "Compute", Commitment: "5", Rates: map[string]string{"m6i.large": "0.0691"}})
	ec2srv, spsrv := httptest.NewServer(ec2), httptest.NewServer(sp)
	defer ec2srv.Close()
	defer spsrv.Close()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2": ec2srv.URL, "AWS_ENDPOINT_URL_SAVINGSPLANS": spsrv.URL,
		"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewCmdImport(streams, nil)
	cmd.SetArgs([]string{"--aws-commitments", "--region", "us-east-1"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("import --aws-commitments: %v\n%s", err, errOut)
	}
	for _, want := range []string{"kind: Commitment", "name: ri-ri-0123", "instanceType: m6i.large", "instanceCount: 5", "region: us-east-1",
		"name: sp-plan-1", "type: ComputeSavingsPlan", "commitment: \"5\"", "pricePerHour: \"0.0691\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var m snapshot.Manifests
	if err := snapshot.Decode("commitments.yaml", out.Bytes(), &m); err != nil {
		t.Fatalf("reading the output back: %v\n%s", err, out)
	}
	if len(m.Commitments) != 2 {
		t.Fatalf("read back %d commitments, want 2", len(m.Commitments))
	}
}

func TestImportFlagsAreExclusive(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--aws-commitments", "-f", "x.yaml"}, "-f and --aws-commitments: give one"},
		{[]string{"-f", "x.yaml", "--region", "us-east-1"}, "--region is for --aws-commitments"},
	} {
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		cmd := NewCmdImport(streams, nil)
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
