package interruption

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	rsaws "github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/interruption/messages"
)

// Defaults.
const (
	// DefaultWaitTime is the long poll of each ReceiveMessage (SQS's most).
	DefaultWaitTime = 20 * time.Second
	// DefaultVisibilityTimeout hides a received message from other
	// receives while it is handled; one whose handling failed comes back
	// after it.
	DefaultVisibilityTimeout = 30 * time.Second
	// DefaultMaxReceives is how many times a message whose handling keeps
	// failing is received before it is dropped.
	DefaultMaxReceives = 5
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait after a
	// failed queue call; it doubles with each failure in a row.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
	maxMessages       = 10
)

// ReasonInterruption is the NodeClaim deletion reason the lifecycle
// controller's metrics and logs report for claims deleted here.
const ReasonInterruption = string(v1alpha1.DeletionReasonInterruption)

// OfferingMarker remembers offerings to avoid for a while; the aws
// provider's *UnavailableOfferings, which insufficient-capacity errors fill
// too.
type OfferingMarker interface {
	MarkUnavailable(instanceType, zone, capacityType string)
}

// Options configure the controller. Queue, SQS and Client are required.
type Options struct {
	// Queue is the SQS queue's name.
	Queue string
	// SQS is the SQS client (the SDK's endpoint resolution applies:
	// AWS_ENDPOINT_URL_SQS and the shared config's services).
	SQS *sqs.Client
	// Client reads NodeClaims and Nodes (the manager's cache) and deletes
	// NodeClaims.
	Client client.Client
	// Recorder records the events on NodeClaims and Nodes.
	Recorder events.EventRecorder
	// Unavailable, when set, gets each interrupted spot offering.
	Unavailable OfferingMarker
	// Logger receives the controller's logs.
	Logger logr.Logger
	// Registerer, when set, gets the controller's metrics.
	Registerer prometheus.Registerer
	// WaitTime, VisibilityTimeout and MaxReceives tune the receives (see
	// the defaults); MinBackoff and MaxBackoff the retries of failed
	// queue calls.
	WaitTime, VisibilityTimeout time.Duration
	MaxReceives                 int
	MinBackoff, MaxBackoff      time.Duration
}

// Controller long-polls the interruption queue and acts on its events. It
// runs on the leader only.
type Controller struct {
	opts    Options
	log     logr.Logger
	metrics *metrics
	// sleep waits between failed calls; tests record the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ manager.LeaderElectionRunnable = (*Controller)(nil)

// RBAC of the interruption controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// New returns the controller; add it to the manager with mgr.Add.
func New(o Options) (*Controller, error) {
	if o.Queue == "" || o.SQS == nil || o.Client == nil {
		return nil, errors.New("interruption: the queue name, the SQS client and the Kubernetes client are required")
	}
	if o.WaitTime <= 0 {
		o.WaitTime = DefaultWaitTime
	}
	// Whole seconds from 1 to 20: a wait of 0 would short-poll in a busy loop.
	o.WaitTime = min(max(o.WaitTime.Round(time.Second), time.Second), 20*time.Second)
	o.VisibilityTimeout = o.VisibilityTimeout.Round(time.Second)
	if o.VisibilityTimeout <= 0 {
		o.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if o.MaxReceives <= 0 {
		o.MaxReceives = DefaultMaxReceives
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("interruption: registering metrics: %w", err)
	}
	return &Controller{opts: o, log: o.Logger.WithValues("queue", o.Queue), metrics: m, sleep: sleepCtx}, nil
}

// NeedLeaderElection makes only the leader receive: two replicas would
// split the messages between them for nothing.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start finds the queue and handles its messages until ctx ends. Failed
// queue calls are logged, counted and retried with exponential backoff;
// Start returns nil when ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("watching the interruption queue")
	url, err := c.queueURL(ctx)
	if err != nil {
		return nil // ctx ended
	}
	b := backoff{min: c.opts.MinBackoff, max: c.opts.MaxBackoff}
	for ctx.Err() == nil {
		msgs, err := c.receive(ctx, url)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			c.metrics.queueErrors.WithLabelValues("ReceiveMessage").Inc()
			d := b.next()
			c.log.Error(err, "receiving from the interruption queue failed; retrying", "after", d.String())
			if c.sleep(ctx, d) != nil {
				break
			}
			continue
		}
		b.reset()
		for i := range msgs {
			c.handle(ctx, url, &msgs[i])
		}
	}
	c.log.Info("stopped watching the interruption queue")
	return nil
}

// queueURL resolves the queue's URL, retrying until it exists or ctx ends.
func (c *Controller) queueURL(ctx context.Context) (string, error) {
	b := backoff{min: c.opts.MinBackoff, max: c.opts.MaxBackoff}
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := c.opts.SQS.GetQueueUrl(cctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.opts.Queue)})
		cancel()
		if err == nil {
			url := aws.ToString(out.QueueUrl)
			c.log.V(1).Info("interruption queue found", "url", url)
			return url, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		c.metrics.queueErrors.WithLabelValues("GetQueueUrl").Inc()
		d := b.next()
		var missing *sqstypes.QueueDoesNotExist
		if errors.As(err, &missing) {
			c.log.Error(err, "the interruption queue does not exist in this account and region; create it and its EventBridge rules (docs/aws.md) or drop --interruption-queue", "retryAfter", d.String())
		} else {
			c.log.Error(err, "looking up the interruption queue failed; retrying", "retryAfter", d.String())
		}
		if err := c.sleep(ctx, d); err != nil {
			return "", err
		}
	}
}

func (c *Controller) receive(ctx context.Context, url string) ([]sqstypes.Message, error) {
	// The long poll plus room for the request itself.
	cctx, cancel := context.WithTimeout(ctx, c.opts.WaitTime+30*time.Second)
	defer cancel()
	out, err := c.opts.SQS.ReceiveMessage(cctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(url),
		MaxNumberOfMessages: maxMessages,
		WaitTimeSeconds:     int32(c.opts.WaitTime / time.Second),
		VisibilityTimeout:   int32(c.opts.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
			sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("ReceiveMessage: %w", err)
	}
	return out.Messages, nil
}

// handle acts on one message and deletes it, unless acting failed and the
// message has been received fewer than MaxReceives times: then it comes
// back after the visibility timeout and is tried again.
func (c *Controller) handle(ctx context.Context, url string, sm *sqstypes.Message) {
	log := c.log.WithValues("messageID", aws.ToString(sm.MessageId))
	msg, err := messages.Parse([]byte(aws.ToString(sm.Body)))
	if err != nil {
		c.metrics.received.WithLabelValues("malformed").Inc()
		log.Info("deleting a message that is not an EC2 interruption event", "error", err.Error(), "bytes", len(aws.ToString(sm.Body)))
		c.delete(ctx, url, sm, log)
		return
	}
	c.metrics.received.WithLabelValues(string(msg.Kind)).Inc()
	log = log.WithValues("event", msg.ID, "kind", string(msg.Kind))
	if msg.Action() == messages.ActionNone {
		// State changes to pending or running are routine; other events
		// should not be routed to this queue at all.
		l := log
		if msg.Kind != messages.KindUnknown {
			l = log.V(1)
		}
		l.Info("deleting an event that needs no action", "detailType", msg.DetailType, "source", msg.Source, "state", msg.State)
		c.delete(ctx, url, sm, log)
		return
	}
	claims, err := c.claimsByInstance(ctx)
	if err == nil {
		for _, id := range msg.InstanceIDs {
			claim, ok := claims[id]
			if !ok {
				log.V(1).Info("no NodeClaim owns the instance; ignoring", "instance", id)
				continue
			}
			if aerr := c.act(ctx, msg, id, claim); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
	}
	if err != nil {
		receives, _ := strconv.Atoi(sm.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		if receives < c.opts.MaxReceives {
			log.Error(err, "acting on the event failed; it is retried when the message comes back", "receives", receives,
				"after", c.opts.VisibilityTimeout.String())
			return
		}
		log.Error(err, "acting on the event failed too many times; dropping it", "receives", receives)
	}
	c.delete(ctx, url, sm, log)
}

func (c *Controller) delete(ctx context.Context, url string, sm *sqstypes.Message, log logr.Logger) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.opts.SQS.DeleteMessage(cctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: sm.ReceiptHandle}); err != nil {
		// The message comes back after its visibility timeout and is
		// handled again, which is harmless: deleting a deleting claim is
		// a no-op.
		c.metrics.queueErrors.WithLabelValues("DeleteMessage").Inc()
		log.Error(err, "deleting the message from the interruption queue failed")
	}
}

// claimsByInstance maps instance IDs to the NodeClaims whose
// status.providerID names them.
func (c *Controller) claimsByInstance(ctx context.Context) (map[string]*v1alpha1.NodeClaim, error) {
	var l v1alpha1.NodeClaimList
	if err := c.opts.Client.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	out := make(map[string]*v1alpha1.NodeClaim, len(l.Items))
	for i := range l.Items {
		if id, err := rsaws.ParseProviderID(l.Items[i].Status.ProviderID); err == nil {
			out[id] = &l.Items[i]
		}
	}
	return out, nil
}

// act applies the message's action to one instance's NodeClaim.
func (c *Controller) act(ctx context.Context, msg messages.Message, instanceID string, claim *v1alpha1.NodeClaim) error {
	log := c.log.WithValues("instance", instanceID, "nodeclaim", claim.Name, "kind", string(msg.Kind))
	note := msg.Describe(instanceID)
	if msg.Kind == messages.KindSpotInterruption && c.opts.Unavailable != nil && claim.Status.CapacityType == cloud.CapacityTypeSpot {
		typ, zone := claim.Status.InstanceType, claim.Status.Zone
		if typ == "" {
			typ = claim.Labels[corev1.LabelInstanceTypeStable]
		}
		if zone == "" {
			zone = claim.Labels[corev1.LabelTopologyZone]
		}
		if typ != "" && zone != "" {
			c.opts.Unavailable.MarkUnavailable(typ, zone, cloud.CapacityTypeSpot)
			c.metrics.actions.WithLabelValues(string(msg.Kind), "mark_unavailable").Inc()
			log.Info("spot offering marked unavailable", "instanceType", typ, "zone", zone)
		}
	}
	if msg.Action() == messages.ActionEvent {
		c.record(ctx, msg, claim, corev1.EventTypeNormal, "None", note)
		c.metrics.actions.WithLabelValues(string(msg.Kind), string(messages.ActionEvent)).Inc()
		log.Info("recorded an interruption event", "note", note)
		return nil
	}
	if claim.DeletionTimestamp != nil {
		log.V(1).Info("NodeClaim already being deleted")
		return nil
	}
	orig := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[v1alpha1.AnnotationDeletionReason] = ReasonInterruption
	if err := c.opts.Client.Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording the deletion reason on NodeClaim %s: %w", claim.Name, err))
	}
	c.record(ctx, msg, claim, corev1.EventTypeWarning, "Delete", note)
	if err := c.opts.Client.Delete(ctx, claim); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting NodeClaim %s: %w", claim.Name, err))
	}
	c.metrics.actions.WithLabelValues(string(msg.Kind), string(messages.ActionDelete)).Inc()
	log.Info("deleting NodeClaim for an interruption event", "note", note, "node", claim.Status.NodeName)
	return nil
}

// record puts the event on the NodeClaim and on its Node, if it has one.
func (c *Controller) record(ctx context.Context, msg messages.Message, claim *v1alpha1.NodeClaim, typ, action, note string) {
	if c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Eventf(claim, nil, typ, msg.Reason(), action, "%s", note)
	if claim.Status.NodeName == "" {
		return
	}
	var node corev1.Node
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, &node); err == nil {
		c.opts.Recorder.Eventf(&node, claim, typ, msg.Reason(), action, "%s", note)
	}
}

// backoff doubles from min to max with full jitter in its upper half.
type backoff struct {
	min, max time.Duration
	failures int
}

func (b *backoff) next() time.Duration {
	d := b.min << min(b.failures, 30)
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.failures++
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.failures = 0 }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// metrics are the controller's Prometheus metrics.
type metrics struct {
	received    *prometheus.CounterVec
	actions     *prometheus.CounterVec
	queueErrors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rightsize_interruption_messages_received_total",
			Help: "Messages received from the interruption queue, by kind: spot_interruption, rebalance_recommendation, state_change, scheduled_change, unknown (not acted on) or malformed (not an EventBridge event).",
		}, []string{"kind"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rightsize_interruption_actions_total",
			Help: "Actions taken on interruption events, by event kind and action: delete (the NodeClaim), event (recorded only) or mark_unavailable (the spot offering).",
		}, []string{"kind", "action"}),
		queueErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rightsize_interruption_queue_errors_total",
			Help: "Failed calls to the interruption queue, by operation (GetQueueUrl, ReceiveMessage, DeleteMessage); each is retried.",
		}, []string{"operation"}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.received, m.actions, m.queueErrors} {
			if err := reg.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
