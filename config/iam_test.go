package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// policy is an IAM policy document as aws/iam-policy.json writes it.
type policy struct {
	Version   string
	Statement []statement
}

type statement struct {
	Sid       string
	Effect    string
	Action    stringOrList
	Resource  stringOrList
	Condition map[string]map[string]stringOrList
}

// stringOrList is an IAM value that is one string or a list of them.
type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

func readPolicy(t *testing.T, data []byte) policy {
	t.Helper()
	var p policy
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("the IAM policy: %v", err)
	}
	return p
}

// Conditions of the policy's statements, by what they check.
var (
	inRegion        = map[string]map[string]stringOrList{"StringEquals": {"aws:RequestedRegion": {"REGION"}}}
	requestTagged   = map[string]map[string]stringOrList{"StringEquals": {"aws:RequestTag/rightsize.dev/cluster": {"CLUSTER_NAME"}}, "StringLike": {"aws:RequestTag/rightsize.dev/ec2nodeclass": {"*"}}}
	resourceTagged  = map[string]map[string]stringOrList{"StringEquals": {"aws:ResourceTag/rightsize.dev/cluster": {"CLUSTER_NAME"}}, "StringLike": {"aws:ResourceTag/rightsize.dev/ec2nodeclass": {"*"}}}
	taggedOnCreate  = map[string]map[string]stringOrList{"StringEquals": {"ec2:CreateAction": {"CreateFleet", "RunInstances", "CreateLaunchTemplate"}, "aws:RequestTag/rightsize.dev/cluster": {"CLUSTER_NAME"}}, "StringLike": {"aws:RequestTag/rightsize.dev/ec2nodeclass": {"*"}}}
	passedToEC2     = map[string]map[string]stringOrList{"StringEquals": {"iam:PassedToService": {"ec2.amazonaws.com"}}}
	ec2             = func(r string) string { return "arn:aws:ec2:REGION:ACCOUNT_ID:" + r }
	unconditioned   map[string]map[string]stringOrList
	launchResources = []string{"arn:aws:ec2:REGION::image/*", "arn:aws:ec2:REGION::snapshot/*", ec2("subnet/*"), ec2("security-group/*"),
		ec2("capacity-reservation/*"), ec2("fleet/*"), ec2("network-interface/*"), ec2("spot-instances-request/*")}
)

// TestIAMPolicy checks aws/iam-policy.json against a table of every
// (action, resource, conditions) it may grant: the exact set, so a grant
// added or widened fails until the table (and docs/aws.md) say why.
func TestIAMPolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("aws", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := readPolicy(t, data)
	type grant struct {
		action, resource string
		cond             map[string]map[string]stringOrList
	}
	var want []grant
	add := func(actions, resources []string, cond map[string]map[string]stringOrList) {
		for _, a := range actions {
			for _, r := range resources {
				want = append(want, grant{a, r, cond})
			}
		}
	}
	add([]string{"ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceTypeOfferings",
		"ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates", "ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory",
		"ec2:DescribeSubnets"}, []string{"*"}, inRegion)
	// The Price List API answers from us-east-1 (and a few others)
	// whatever the cluster's region, so it cannot be scoped by region;
	// it reads public prices only.
	add([]string{"pricing:GetProducts"}, []string{"*"}, unconditioned)
	add([]string{"ssm:GetParameter"}, []string{"arn:aws:ssm:REGION::parameter/aws/service/*"}, unconditioned)
	add([]string{"ec2:CreateFleet", "ec2:RunInstances"}, []string{ec2("instance/*"), ec2("volume/*")}, requestTagged)
	add([]string{"ec2:CreateFleet", "ec2:RunInstances"}, []string{ec2("launch-template/*")}, resourceTagged)
	add([]string{"ec2:CreateFleet", "ec2:RunInstances"}, launchResources, unconditioned)
	add([]string{"ec2:CreateLaunchTemplate"}, []string{ec2("launch-template/*")}, requestTagged)
	add([]string{"ec2:CreateTags"}, []string{ec2("instance/*"), ec2("volume/*"), ec2("launch-template/*")}, taggedOnCreate)
	add([]string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"}, []string{ec2("instance/*"), ec2("launch-template/*")}, resourceTagged)
	add([]string{"sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"}, []string{"arn:aws:sqs:REGION:ACCOUNT_ID:INTERRUPTION_QUEUE"}, unconditioned)
	add([]string{"iam:PassRole"}, []string{"arn:aws:iam::ACCOUNT_ID:role/NODE_ROLE"}, passedToEC2)

	var got []grant
	for _, s := range p.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement %s: effect %s; the policy only allows", s.Sid, s.Effect)
		}
		for _, a := range s.Action {
			for _, r := range s.Resource {
				got = append(got, grant{a, r, s.Condition})
			}
		}
	}
	key := func(g grant) string { return g.action + " on " + g.resource }
	for _, w := range want {
		i := slices.IndexFunc(got, func(g grant) bool { return key(g) == key(w) })
		if i < 0 {
			t.Errorf("%s is not granted", key(w))
			continue
		}
		if g := got[i]; !reflect.DeepEqual(normal(g.cond), normal(w.cond)) {
			t.Errorf("%s: conditions %v, want %v", key(w), g.cond, w.cond)
		}
	}
	for _, g := range got {
		if !slices.ContainsFunc(want, func(w grant) bool { return key(w) == key(g) }) {
			t.Errorf("%s is granted, and not in the table", key(g))
		}
		if g.resource == "*" && !readOnly(g.action) {
			t.Errorf("%s: an action that changes something on Resource \"*\"", key(g))
		}
		if g.resource != "*" && !strings.HasPrefix(g.resource, "arn:aws:iam::") && !strings.Contains(g.resource, ":REGION:") {
			t.Errorf("%s: a regional resource not scoped to REGION", key(g))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d grants, want %d", len(got), len(want))
	}
}

// readOnly reports whether an action only reads.
func readOnly(action string) bool {
	_, name, _ := strings.Cut(action, ":")
	return strings.HasPrefix(name, "Describe") || strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List")
}

// normal treats a nil and an empty condition block alike.
func normal(c map[string]map[string]stringOrList) map[string]map[string]stringOrList {
	if len(c) == 0 {
		return nil
	}
	return c
}

// TestIAMPolicyDecides evaluates the policy, as IAM would for an
// identity-based policy (an action is allowed when a statement matches its
// action, resource and every condition), on requests the operator makes and
// on the ones it must not be able to make.
func TestIAMPolicyDecides(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("aws", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := readPolicy(t, data)
	own := map[string]string{"rightsize.dev/cluster": "CLUSTER_NAME", "rightsize.dev/ec2nodeclass": "default"}
	other := map[string]string{"rightsize.dev/cluster": "other", "rightsize.dev/ec2nodeclass": "default"}
	onlyCluster := map[string]string{"rightsize.dev/cluster": "CLUSTER_NAME"}
	tests := []struct {
		name         string
		action, arn  string
		region       string
		requestTags  map[string]string
		resourceTags map[string]string
		createAction string
		wantAllowed  bool
	}{
		{"describe in the cluster's region", "ec2:DescribeInstances", "*", "REGION", nil, nil, "", true},
		{"describe in another region", "ec2:DescribeInstances", "*", "us-west-2", nil, nil, "", false},
		{"launch a tagged instance", "ec2:CreateFleet", ec2("instance/i-1"), "REGION", own, nil, "", true},
		{"launch an untagged instance", "ec2:CreateFleet", ec2("instance/i-1"), "REGION", nil, nil, "", false},
		{"launch with another cluster's tag", "ec2:RunInstances", ec2("instance/i-1"), "REGION", other, nil, "", false},
		{"launch with the cluster tag only", "ec2:RunInstances", ec2("instance/i-1"), "REGION", onlyCluster, nil, "", false},
		{"launch in another region", "ec2:CreateFleet", "arn:aws:ec2:us-west-2:ACCOUNT_ID:instance/i-1", "us-west-2", own, nil, "", false},
		{"launch from an own template", "ec2:CreateFleet", ec2("launch-template/lt-1"), "REGION", own, own, "", true},
		{"launch from someone's template", "ec2:CreateFleet", ec2("launch-template/lt-1"), "REGION", own, nil, "", false},
		{"launch from another cluster's template", "ec2:CreateFleet", ec2("launch-template/lt-1"), "REGION", own, other, "", false},
		{"create a tagged template", "ec2:CreateLaunchTemplate", ec2("launch-template/lt-1"), "REGION", own, nil, "", true},
		{"create an untagged template", "ec2:CreateLaunchTemplate", ec2("launch-template/lt-1"), "REGION", nil, nil, "", false},
		{"tag at launch", "ec2:CreateTags", ec2("instance/i-1"), "REGION", own, nil, "CreateFleet", true},
		{"tag at launch without the cluster tag", "ec2:CreateTags", ec2("instance/i-1"), "REGION", map[string]string{"Name": "x"}, nil, "CreateFleet", false},
		{"tag an existing instance", "ec2:CreateTags", ec2("instance/i-1"), "REGION", own, own, "", false},
		{"tag a security group at creation", "ec2:CreateTags", ec2("security-group/sg-1"), "REGION", own, nil, "CreateSecurityGroup", false},
		{"terminate an own instance", "ec2:TerminateInstances", ec2("instance/i-1"), "REGION", nil, own, "", true},
		{"terminate another cluster's", "ec2:TerminateInstances", ec2("instance/i-1"), "REGION", nil, other, "", false},
		{"terminate an untagged one", "ec2:TerminateInstances", ec2("instance/i-1"), "REGION", nil, nil, "", false},
		{"terminate one tagged only with the cluster", "ec2:TerminateInstances", ec2("instance/i-1"), "REGION", nil, onlyCluster, "", false},
		{"terminate in another region", "ec2:TerminateInstances", "arn:aws:ec2:us-west-2:ACCOUNT_ID:instance/i-1", "us-west-2", nil, own, "", false},
		{"delete an own template", "ec2:DeleteLaunchTemplate", ec2("launch-template/lt-1"), "REGION", nil, own, "", true},
		{"delete someone's template", "ec2:DeleteLaunchTemplate", ec2("launch-template/lt-1"), "REGION", nil, nil, "", false},
		{"delete a volume", "ec2:DeleteVolume", ec2("volume/vol-1"), "REGION", nil, own, "", false},
		{"pass the node role", "iam:PassRole", "arn:aws:iam::ACCOUNT_ID:role/NODE_ROLE", "", nil, nil, "", true},
		{"pass another role", "iam:PassRole", "arn:aws:iam::ACCOUNT_ID:role/admin", "", nil, nil, "", false},
		{"read the queue", "sqs:ReceiveMessage", "arn:aws:sqs:REGION:ACCOUNT_ID:INTERRUPTION_QUEUE", "REGION", nil, nil, "", true},
		{"read another queue", "sqs:ReceiveMessage", "arn:aws:sqs:REGION:ACCOUNT_ID:other", "REGION", nil, nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := map[string][]string{"aws:RequestedRegion": {tc.region}}
			if tc.action == "iam:PassRole" {
				ctx["iam:PassedToService"] = []string{"ec2.amazonaws.com"}
			}
			if tc.createAction != "" {
				ctx["ec2:CreateAction"] = []string{tc.createAction}
			}
			for k, v := range tc.requestTags {
				ctx["aws:RequestTag/"+k] = []string{v}
			}
			for k, v := range tc.resourceTags {
				ctx["aws:ResourceTag/"+k] = []string{v}
			}
			if got := p.allows(tc.action, tc.arn, ctx); got != tc.wantAllowed {
				t.Errorf("%s on %s: allowed %t, want %t", tc.action, tc.arn, got, tc.wantAllowed)
			}
		})
	}
}

// allows evaluates the policy's Allow statements for one request: the
// action and resource match a statement's (IAM's * and ? wildcards), and the
// request's context meets each of its conditions. A condition key missing
// from the context fails it, as IAM's StringEquals and StringLike do.
func (p policy) allows(action, resource string, ctx map[string][]string) bool {
	for _, s := range p.Statement {
		if s.Effect != "Allow" || !anyMatch(s.Action, action) || !anyMatch(s.Resource, resource) {
			continue
		}
		ok := true
		for op, conds := range s.Condition {
			for k, want := range conds {
				have, present := ctx[k]
				if !present || !slices.ContainsFunc(have, func(h string) bool {
					return slices.ContainsFunc(want, func(w string) bool {
						switch op {
						case "StringEquals":
							return h == w
						case "StringLike":
							m, _ := path.Match(w, h)
							return m
						}
						return false
					})
				}) {
					ok = false
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// anyMatch reports whether one of the patterns (IAM wildcards, which unlike
// path.Match's cross '/') matches s.
func anyMatch(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		m, _ := path.Match(strings.ReplaceAll(p, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
		return m
	})
}

// TestDocsCarryThePolicy checks docs/aws.md prints aws/iam-policy.json as
// it is, and that its SQS queue policies refuse requests without TLS.
func TestDocsCarryThePolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("aws", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "aws.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Minimal IAM policy")
	if !ok {
		t.Fatal("docs/aws.md has no section Minimal IAM policy")
	}
	_, block, ok := strings.Cut(rest, "```json\n")
	if !ok {
		t.Fatal("docs/aws.md: no JSON block in Minimal IAM policy")
	}
	block, _, _ = strings.Cut(block, "```")
	if !reflect.DeepEqual(readPolicy(t, []byte(block)), readPolicy(t, data)) {
		t.Errorf("the policy in docs/aws.md differs from config/aws/iam-policy.json")
	}
	if n := strings.Count(string(doc), "aws:SecureTransport"); n < 2 {
		t.Errorf("docs/aws.md: %d queue policy statements deny requests without TLS, want one in the CLI and one in the CloudFormation setup", n)
	}
}
