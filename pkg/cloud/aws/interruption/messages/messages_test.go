package messages

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// spotEvent and rebalanceEvent are EventBridge's examples kept in testdata,
// which the interruption controller's tests send through SQS too.
var spotEvent, rebalanceEvent = testEvent("spot.json"), testEvent("rebalance.json")

func testEvent(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

// Event bodies in the shapes EventBridge delivers them (the AWS user
// guides' examples, with our own IDs).
const (
	stateEvent = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification",
"source":"aws.ec2","account":"123456789012","time":"2026-11-30T12:00:00Z","region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],"detail":{"instance-id":"i-abcd1111","state":"%s"}}`
	healthEvent = `{"version":"0","id":"121345678-1234-1234-1234-123456789012","detail-type":"AWS Health Event","source":"aws.health",
"account":"123456789012","time":"2026-11-30T00:00:00Z","region":"us-east-1","resources":["i-0123456789abcdef0"],
"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1",
"service":"%s","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"%s",
"startTime":"Sat, 05 Dec 2026 15:10:09 GMT","endTime":"Sat, 05 Dec 2026 16:10:09 GMT",
"eventDescription":[{"language":"en_US","latestDescription":"retirement"}],
"affectedEntities":[{"entityValue":"i-0123456789abcdef0"},{"entityValue":"vol-0123456789abcdef0"},{"entityValue":"i-fedcba9876543210f"}]}}`
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		kind      Kind
		action    Action
		instances []string
		wantErr   string
	}{
		{name: "spot interruption warning deletes", body: spotEvent, kind: KindSpotInterruption, action: ActionDelete, instances: []string{"i-0b662ef9931388ba0"}},
		{name: "rebalance recommendation is an event only", body: rebalanceEvent, kind: KindRebalanceRecommendation, action: ActionEvent, instances: []string{"i-0b662ef9931388ba0"}},
		{name: "stopping deletes", body: fmt.Sprintf(stateEvent, "stopping"), kind: KindStateChange, action: ActionDelete, instances: []string{"i-abcd1111"}},
		{name: "stopped deletes", body: fmt.Sprintf(stateEvent, "stopped"), kind: KindStateChange, action: ActionDelete, instances: []string{"i-abcd1111"}},
		{name: "shutting-down deletes", body: fmt.Sprintf(stateEvent, "shutting-down"), kind: KindStateChange, action: ActionDelete, instances: []string{"i-abcd1111"}},
		{name: "terminated deletes", body: fmt.Sprintf(stateEvent, "terminated"), kind: KindStateChange, action: ActionDelete, instances: []string{"i-abcd1111"}},
		{name: "running is ignored", body: fmt.Sprintf(stateEvent, "running"), kind: KindStateChange, action: ActionNone, instances: []string{"i-abcd1111"}},
		{name: "pending is ignored", body: fmt.Sprintf(stateEvent, "pending"), kind: KindStateChange, action: ActionNone, instances: []string{"i-abcd1111"}},
		{name: "EC2 scheduled change deletes its instances, not its volumes", body: fmt.Sprintf(healthEvent, "EC2", "scheduledChange"), kind: KindScheduledChange,
			action: ActionDelete, instances: []string{"i-0123456789abcdef0", "i-fedcba9876543210f"}},
		{name: "EC2 Health issue is not a scheduled change", body: fmt.Sprintf(healthEvent, "EC2", "issue"), kind: KindUnknown, action: ActionNone},
		{name: "Health event of another service is ignored", body: fmt.Sprintf(healthEvent, "RDS", "scheduledChange"), kind: KindUnknown, action: ActionNone},
		{name: "another detail type is unknown", body: `{"detail-type":"EC2 AMI State Change","source":"aws.ec2","detail":{"ImageId":"ami-1"}}`, kind: KindUnknown, action: ActionNone},
		{name: "a spot warning from another source is unknown", body: `{"detail-type":"EC2 Spot Instance Interruption Warning","source":"my.app","detail":{"instance-id":"i-abcd1111"}}`, kind: KindUnknown, action: ActionNone},
		{name: "not JSON", body: "hello", wantErr: "not an EventBridge event"},
		{name: "JSON, not an event", body: `{"Records":[{"eventSource":"aws:s3"}]}`, wantErr: "no detail-type or source"},
		{name: "JSON array", body: `[1,2]`, wantErr: "not an EventBridge event"},
		{name: "spot warning without an instance", body: `{"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{}}`, wantErr: "not an EC2 instance ID"},
		{name: "spot warning with a bad instance ID", body: `{"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-XYZ"}}`, wantErr: "not an EC2 instance ID"},
		{name: "detail of the wrong shape", body: `{"detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":"i-abcd1111"}`, wantErr: "detail"},
		{name: "state change without a state", body: `{"detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"instance-id":"i-abcd1111"}}`, wantErr: "no state"},
		{name: "bad time", body: `{"detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"yesterday","detail":{"instance-id":"i-abcd1111"}}`, wantErr: "time"},
		{name: "scheduled change with no instance", body: `{"detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"vol-1"}]}}`, wantErr: "no affected instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %+v, %v; want an error containing %q", m, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tc.kind || m.Action() != tc.action || !slices.Equal(m.InstanceIDs, tc.instances) {
				t.Errorf("Parse: kind %s, action %s, instances %v; want %s, %s, %v", m.Kind, m.Action(), m.InstanceIDs, tc.kind, tc.action, tc.instances)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	m, err := Parse([]byte(spotEvent))
	if err != nil {
		t.Fatal(err)
	}
	want := "spot interruption warning for i-0b662ef9931388ba0: the instance is reclaimed at 12:04:05Z; draining the node and replacing it"
	if got := m.Describe("i-0b662ef9931388ba0"); got != want {
		t.Errorf("spot: %q\nwant %q", got, want)
	}
	if !m.Time.Equal(time.Date(2026, 11, 30, 12, 2, 5, 0, time.UTC)) {
		t.Errorf("event time %s", m.Time)
	}
	h, err := Parse([]byte(fmt.Sprintf(healthEvent, "EC2", "scheduledChange")))
	if err != nil {
		t.Fatal(err)
	}
	want = "AWS Health scheduled AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED for i-0123456789abcdef0 starting 2026-12-05T15:10:09Z; draining the node and replacing it"
	if got := h.Describe("i-0123456789abcdef0"); got != want {
		t.Errorf("health: %q\nwant %q", got, want)
	}
	r, err := Parse([]byte(rebalanceEvent))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Describe("i-0b662ef9931388ba0"); !strings.HasSuffix(got, "no action taken") {
		t.Errorf("rebalance: %q, want it to say no action is taken", got)
	}
	s, err := Parse([]byte(fmt.Sprintf(stateEvent, "stopping")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Describe("i-abcd1111"), "instance i-abcd1111 is stopping; draining the node and replacing it"; got != want {
		t.Errorf("state change: %q, want %q", got, want)
	}
}

// FuzzParse checks that Parse never panics and that what it accepts is
// consistent: a known kind names at least one well-formed instance, an
// unknown kind none and no action.
func FuzzParse(f *testing.F) {
	for _, s := range []string{spotEvent, rebalanceEvent, fmt.Sprintf(stateEvent, "stopping"), fmt.Sprintf(healthEvent, "EC2", "scheduledChange"),
		fmt.Sprintf(healthEvent, "EC2", "issue"), "", "{}", "null", `{"detail-type":"x","source":"y"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(body)
		if err != nil {
			if m.Kind != "" || len(m.InstanceIDs) != 0 {
				t.Fatalf("an error with a message: %+v", m)
			}
			return
		}
		switch m.Kind {
		case KindUnknown:
			if len(m.InstanceIDs) != 0 || m.Action() != ActionNone {
				t.Fatalf("unknown kind with instances %v or action %s", m.InstanceIDs, m.Action())
			}
		case KindSpotInterruption, KindRebalanceRecommendation, KindStateChange, KindScheduledChange:
			if len(m.InstanceIDs) == 0 {
				t.Fatalf("%s without an instance", m.Kind)
			}
			for _, id := range m.InstanceIDs {
				if !validInstanceID(id) {
					t.Fatalf("%s names %q, not an instance ID", m.Kind, id)
				}
				if d := m.Describe(id); !strings.Contains(d, id) {
					t.Fatalf("description %q does not name %s", d, id)
				}
			}
		default:
			t.Fatalf("kind %q", m.Kind)
		}
		if m.Source == "" || m.DetailType == "" {
			t.Fatalf("accepted without a source or detail type: %+v", m)
		}
	})
}
