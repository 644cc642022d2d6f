// Package messages decodes the EventBridge events the interruption
// controller reads from its SQS queue (spot interruption warnings,
// rebalance recommendations, instance state changes, AWS Health scheduled
// changes) into what they ask of the instances they name. It is pure and
// fuzzed, and imports nothing beyond the standard library, so that its fuzz
// run instruments only itself.
package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is what an event says about its instances.
type Kind string

// Kinds of events. KindUnknown is well-formed JSON the controller does not
// act on (another detail type, a Health event for another service or
// category, EventBridge's test events).
const (
	KindSpotInterruption        Kind = "spot_interruption"
	KindRebalanceRecommendation Kind = "rebalance_recommendation"
	KindStateChange             Kind = "state_change"
	KindScheduledChange         Kind = "scheduled_change"
	KindUnknown                 Kind = "unknown"
)

// Action is what the controller does about an event's instances.
type Action string

// Actions.
const (
	// ActionDelete deletes the instance's NodeClaim: its node is drained
	// and a replacement planned for its pods.
	ActionDelete Action = "delete"
	// ActionEvent only records an event on the NodeClaim and its Node.
	ActionEvent Action = "event"
	// ActionNone ignores the event.
	ActionNone Action = "none"
)

// EventBridge detail types and sources of the events handled.
const (
	detailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	detailRebalance        = "EC2 Instance Rebalance Recommendation"
	detailStateChange      = "EC2 Instance State-change Notification"
	detailHealth           = "AWS Health Event"
	sourceEC2              = "aws.ec2"
	sourceHealth           = "aws.health"
)

// SpotInterruptionNotice is how long after its warning EC2 reclaims a spot
// instance.
const SpotInterruptionNotice = 2 * time.Minute

// Message is one decoded EventBridge event.
type Message struct {
	// Kind is what the event is.
	Kind Kind
	// ID is the event's ID, DetailType and Source its EventBridge detail
	// type and source.
	ID, DetailType, Source string
	// Time is when the event was emitted.
	Time time.Time
	// InstanceIDs are the instances the event is about (one, except for
	// Health events, which may list several).
	InstanceIDs []string
	// State is the new instance state of a state-change event.
	State string
	// HealthEventType is a Health event's eventTypeCode, e.g.
	// AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED.
	HealthEventType string
	// StartTime is when a Health event's scheduled change starts (zero if
	// the event has none or it does not parse).
	StartTime time.Time
}

// event is the EventBridge envelope.
type event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse decodes one SQS message body holding an EventBridge event. An error
// means the body is not an EventBridge event, or is one of the handled
// kinds without the instance it must name; a well-formed event of another
// kind is KindUnknown with no error.
func Parse(body []byte) (Message, error) {
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		return Message{}, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if e.DetailType == "" || e.Source == "" {
		return Message{}, errors.New("not an EventBridge event: no detail-type or source")
	}
	m := Message{Kind: KindUnknown, ID: e.ID, DetailType: e.DetailType, Source: e.Source}
	if e.Time != "" {
		t, err := time.Parse(time.RFC3339, e.Time)
		if err != nil {
			return Message{}, fmt.Errorf("event %s: time %q: %w", e.ID, e.Time, err)
		}
		m.Time = t.UTC()
	}
	switch {
	case e.Source == sourceEC2 && (e.DetailType == detailSpotInterruption || e.DetailType == detailRebalance || e.DetailType == detailStateChange):
		var d ec2Detail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return Message{}, fmt.Errorf("event %s (%s): detail: %w", e.ID, e.DetailType, err)
		}
		if !validInstanceID(d.InstanceID) {
			return Message{}, fmt.Errorf("event %s (%s): instance-id %q is not an EC2 instance ID", e.ID, e.DetailType, d.InstanceID)
		}
		m.InstanceIDs = []string{d.InstanceID}
		switch e.DetailType {
		case detailSpotInterruption:
			m.Kind = KindSpotInterruption
		case detailRebalance:
			m.Kind = KindRebalanceRecommendation
		default:
			if d.State == "" {
				return Message{}, fmt.Errorf("event %s (%s): no state", e.ID, e.DetailType)
			}
			m.Kind, m.State = KindStateChange, d.State
		}
	case e.Source == sourceHealth && e.DetailType == detailHealth:
		var d healthDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return Message{}, fmt.Errorf("event %s (%s): detail: %w", e.ID, e.DetailType, err)
		}
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			return m, nil
		}
		for _, a := range d.AffectedEntities {
			// Health lists other resources (volumes, hosts) too.
			if validInstanceID(a.EntityValue) {
				m.InstanceIDs = append(m.InstanceIDs, a.EntityValue)
			}
		}
		if len(m.InstanceIDs) == 0 {
			return Message{}, fmt.Errorf("event %s (%s %s): no affected instance", e.ID, e.DetailType, d.EventTypeCode)
		}
		m.Kind, m.HealthEventType = KindScheduledChange, d.EventTypeCode
		m.StartTime = parseHealthTime(d.StartTime)
	}
	return m, nil
}

// parseHealthTime reads a Health event's time, which is RFC 1123 ("Sat, 05
// Jun 2021 15:10:09 GMT") in the events AWS sends and RFC 3339 in some
// examples; zero if neither.
func parseHealthTime(s string) time.Time {
	for _, layout := range []string{time.RFC1123, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// validInstanceID reports whether s looks like an EC2 instance ID: i-
// followed by 8 or 17 lowercase hex digits.
func validInstanceID(s string) bool {
	hex, ok := strings.CutPrefix(s, "i-")
	if !ok || (len(hex) != 8 && len(hex) != 17) {
		return false
	}
	for _, r := range hex {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// stoppingStates are the instance states whose node goes away.
var stoppingStates = map[string]bool{"stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

// Action is what the controller does about the message's instances, as
// Karpenter: spot interruptions, scheduled changes and instances stopping
// or terminating lose their NodeClaim; rebalance recommendations are only
// recorded.
func (m Message) Action() Action {
	switch m.Kind {
	case KindSpotInterruption, KindScheduledChange:
		return ActionDelete
	case KindStateChange:
		if stoppingStates[m.State] {
			return ActionDelete
		}
	case KindRebalanceRecommendation:
		return ActionEvent
	}
	return ActionNone
}

// Reason is the event reason recorded on the NodeClaim and Node.
func (m Message) Reason() string {
	switch m.Kind {
	case KindSpotInterruption:
		return "SpotInterrupted"
	case KindRebalanceRecommendation:
		return "RebalanceRecommended"
	case KindStateChange:
		return "InstanceStopping"
	case KindScheduledChange:
		return "ScheduledChange"
	}
	return "Unknown"
}

// Describe is the one sentence recorded for the instance: what happens to
// it and what the operator does.
func (m Message) Describe(instanceID string) string {
	const clock = "15:04:05Z07:00"
	then := "draining the node and replacing it"
	if m.Action() != ActionDelete {
		then = "no action taken"
	}
	switch m.Kind {
	case KindSpotInterruption:
		if m.Time.IsZero() {
			return fmt.Sprintf("spot interruption warning for %s: the instance is reclaimed within %s; %s", instanceID, SpotInterruptionNotice, then)
		}
		return fmt.Sprintf("spot interruption warning for %s: the instance is reclaimed at %s; %s", instanceID,
			m.Time.Add(SpotInterruptionNotice).Format(clock), then)
	case KindRebalanceRecommendation:
		return fmt.Sprintf("rebalance recommendation for %s: the spot instance is at elevated risk of interruption; %s", instanceID, then)
	case KindStateChange:
		return fmt.Sprintf("instance %s is %s; %s", instanceID, m.State, then)
	case KindScheduledChange:
		what := m.HealthEventType
		if what == "" {
			what = "a scheduled change"
		}
		if m.StartTime.IsZero() {
			return fmt.Sprintf("AWS Health scheduled %s for %s; %s", what, instanceID, then)
		}
		return fmt.Sprintf("AWS Health scheduled %s for %s starting %s; %s", what, instanceID, m.StartTime.Format(time.RFC3339), then)
	}
	return fmt.Sprintf("%s event for %s; %s", m.DetailType, instanceID, then)
}
