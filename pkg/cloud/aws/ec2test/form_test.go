package ec2test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestParamsDecodesFlattenedListsAndStructures(t *testing.T) {
	v, err := url.ParseQuery("Action=CreateFleet&Filter.1.Name=tag%3Ateam&Filter.1.Value.1=a&Filter.1.Value.2=b*&Filter.2.Name=state&Filter.2.Value.1=x" +
		"&InstanceId.1=i-1&InstanceId.2=i-2&InstanceId.4=i-4" +
		"&TagSpecification.1.ResourceType=instance&TagSpecification.1.Tag.1.Key=k&TagSpecification.1.Tag.1.Value=v" +
		"&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large&LaunchTemplateConfigs.1.Overrides.2.InstanceType=c5.large")
	if err != nil {
		t.Fatal(err)
	}
	p := newParams(v)
	if got := p.list("InstanceId"); strings.Join(got, ",") != "i-1,i-2" {
		t.Errorf("list stops at the first gap: %v", got)
	}
	fs := p.filters()
	if len(fs) != 2 || fs[0].Name != "tag:team" || strings.Join(fs[0].Values, ",") != "a,b*" {
		t.Errorf("filters = %+v", fs)
	}
	if ts := p.tagSpecs("TagSpecification"); ts["instance"]["k"] != "v" {
		t.Errorf("tag specs = %v", ts)
	}
	cfgs := p.structs("LaunchTemplateConfigs")
	if len(cfgs) != 1 || len(cfgs[0].structs("Overrides")) != 2 || cfgs[0].structs("Overrides")[1].get("InstanceType") != "c5.large" {
		t.Errorf("nested structures decoded wrong")
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*-x86_64-*", "al2023-x86_64-standard", true}, {"ab", "abc", false}, {"*c", "abc", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false},
	} {
		if got := wildcardMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
}

// FuzzWildcardMatch compares the matcher with a regular expression.
func FuzzWildcardMatch(f *testing.F) {
	f.Add("a*b?c", "aXXbYc")
	f.Add("**", "")
	f.Add("?*?", "ab")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 64 || len(s) > 64 {
			return
		}
		var re strings.Builder
		re.WriteString("(?s)^")
		for _, r := range pattern {
			switch r {
			case '*':
				re.WriteString(".*")
			case '?':
				re.WriteString(".")
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString("$")
		rx, err := regexp.Compile(re.String())
		if err != nil {
			return
		}
		// The matcher works on bytes, so compare only on ASCII input.
		for _, c := range pattern + s {
			if c > 127 {
				return
			}
		}
		if got, want := wildcardMatch(pattern, s), rx.MatchString(s); got != want {
			t.Fatalf("wildcardMatch(%q, %q) = %v, regexp says %v", pattern, s, got, want)
		}
	})
}

// FuzzParams feeds arbitrary request bodies to the form decoder and the
// whole dispatcher: nothing may panic, and every answer is a response or an
// error document.
func FuzzParams(f *testing.F) {
	f.Add("Action=DescribeInstances&Filter.1.Name=tag:a&Filter.1.Value.1=*")
	f.Add("Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1&TargetCapacitySpecification.DefaultTargetCapacityType=spot&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId=lt-1")
	f.Add("Action=DescribeInstanceTypes&NextToken=page-99&MaxResults=-1")
	f.Add("Action=CreateLaunchTemplate&LaunchTemplateName=x&LaunchTemplateData.ImageId=ami-1&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize=x")
	f.Fuzz(func(t *testing.T, body string) {
		v, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		s := New("us-east-1")
		s.AddInstanceType(InstanceType{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, Arch: "x86_64", Zones: []string{"us-east-1a"}, OnDemandPrice: 0.1, Spot: true})
		s.AddSubnet(Subnet{ID: "subnet-1", Zone: "us-east-1a"})
		s.AddImage(Image{ID: "ami-1", Arch: "x86_64"})
		p := newParams(v)
		_ = p.filters()
		_ = p.tagSpecs("TagSpecification")
		out, _, err := s.dispatch(p.get("Action"), p)
		if err == nil && !strings.Contains(string(out), "Response") {
			t.Fatalf("no response document: %s", out)
		}
		if err != nil {
			if _, ok := err.(*apiError); !ok {
				t.Fatalf("error %v is not an API error", err)
			}
		}
	})
}
