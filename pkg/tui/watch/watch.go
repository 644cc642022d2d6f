// Package watch keeps the TUI up to date with a live cluster: client-go
// informers on pods, nodes, DaemonSets, PodDisruptionBudgets, NodePools
// (Karpenter's and ours, when their CRDs exist), NodeClaims and node
// classes (for their kubelet settings). Every change
// becomes an Event; events are batched (a burst of thousands at start-up is
// one message, not thousands) and handed to a send function, which in the
// TUI is tea.Program.Send. Nothing here is shared with the UI: the program
// keeps its own view of the objects, built from the events.
package watch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// Resources watched through the dynamic client, when their CRDs exist.
var (
	KarpenterNodePools = snapshot.KarpenterNodePools
	NodePools          = schema.GroupVersionResource{Group: "rightsize.dev", Version: "v1alpha1", Resource: "nodepools"}
	NodeClaims         = schema.GroupVersionResource{Group: "rightsize.dev", Version: "v1alpha1", Resource: "nodeclaims"}
	Commitments        = snapshot.RightsizeCommitments
)

// Kind says which informer an Event comes from.
type Kind int

// Kinds of objects watched.
const (
	Pod Kind = iota
	Node
	DaemonSet
	PDB
	KarpenterNodePool
	NodePool
	NodeClaim
	// NodeClass events are keyed "group/resource/name" (snapshot's
	// NodeClassResources).
	NodeClass
	// Commitment is a rightsize.dev Commitment (Reserved Instances,
	// Savings Plans): the plans spend them as explain does.
	Commitment
)

// Event is one object added, changed (Obj is the new object) or deleted
// (Obj is nil). Key is "namespace/name" or "name".
type Event struct {
	Kind Kind
	Key  string
	Obj  any
}

// Batch is the events of the last FlushInterval, in order.
type Batch struct{ Events []Event }

// Synced is sent once every informer has listed its objects: the program
// holds the whole cluster from then on.
type Synced struct {
	// CRDs reports which optional resources are watched.
	KarpenterNodePools, NodePools, NodeClaims, Commitments bool
	// Unread are the optional resources served that the user may not list
	// (RBAC), as "resource.group": they are not watched, and the plan is
	// made without them, as live explain makes it.
	Unread []string
}

// Error is a watch or list failure, e.g. RBAC; informers keep retrying.
type Error struct{ Err error }

// FlushInterval is how long events are gathered before a Batch is sent.
const FlushInterval = 100 * time.Millisecond

// Watcher runs the informers.
type Watcher struct {
	clients snapshot.ClusterClients
	send    func(any)
	events  chan Event

	mu      sync.Mutex
	dynamic map[schema.GroupVersionResource]bool
	ctx     context.Context
	dynF    dynamicinformer.DynamicSharedInformerFactory
}

// Start starts the informers and the batcher; they stop with ctx. send is
// called from the watcher's goroutines.
func Start(ctx context.Context, clients snapshot.ClusterClients, send func(any)) *Watcher {
	w := &Watcher{clients: clients, send: send, events: make(chan Event, 4096), dynamic: map[schema.GroupVersionResource]bool{}, ctx: ctx}
	go w.batch(ctx)
	go w.run(ctx)
	return w
}

func (w *Watcher) run(ctx context.Context) {
	kf := informers.NewSharedInformerFactoryWithOptions(w.clients.Kube, 0)
	// Finished pods hold no resources; leave them on the server.
	podF := informers.NewSharedInformerFactoryWithOptions(w.clients.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
	}))
	synced := []cache.InformerSynced{
		w.add(podF.Core().V1().Pods().Informer(), Pod, "pods"),
		w.add(kf.Core().V1().Nodes().Informer(), Node, "nodes"),
		w.add(kf.Apps().V1().DaemonSets().Informer(), DaemonSet, "daemonsets"),
	}
	// Optional resources the user may not list are left unwatched: an
	// informer on them would never sync, and the program never plan.
	var s Synced
	readable := func(what string, list func() error) bool {
		if err := list(); apierrors.IsForbidden(err) {
			s.Unread = append(s.Unread, what)
			return false
		}
		return true
	}
	if readable("poddisruptionbudgets.policy", func() error {
		_, err := w.clients.Kube.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}) {
		synced = append(synced, w.add(kf.Policy().V1().PodDisruptionBudgets().Informer(), PDB, "poddisruptionbudgets"))
	}
	dynReadable := func(gvr schema.GroupVersionResource) bool {
		return readable(gvr.Resource+"."+gvr.Group, func() error {
			_, err := w.clients.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		})
	}
	w.mu.Lock()
	if w.clients.Dynamic != nil {
		w.dynF = dynamicinformer.NewDynamicSharedInformerFactory(w.clients.Dynamic, 0)
		for _, r := range []struct {
			gvr  schema.GroupVersionResource
			kind Kind
			on   *bool
		}{{KarpenterNodePools, KarpenterNodePool, &s.KarpenterNodePools}, {NodePools, NodePool, &s.NodePools}, {NodeClaims, NodeClaim, &s.NodeClaims}, {Commitments, Commitment, &s.Commitments}} {
			if ok, err := w.served(r.gvr); err != nil {
				w.send(Error{err})
			} else if ok && dynReadable(r.gvr) {
				*r.on = true
				w.dynamic[r.gvr] = true
				synced = append(synced, w.add(w.dynF.ForResource(r.gvr).Informer(), r.kind, r.gvr.Resource+"."+r.gvr.Group))
			}
		}
		for _, gvr := range snapshot.NodeClassResources() {
			// Optional: without them the pools plan with default kubelets.
			if ok, err := w.served(gvr); err == nil && ok && dynReadable(gvr) {
				w.dynamic[gvr] = true
				synced = append(synced, w.addKeyed(w.dynF.ForResource(gvr).Informer(), NodeClass, gvr.Resource+"."+gvr.Group, gvr.Group+"/"+gvr.Resource+"/"))
			}
		}
		w.dynF.Start(ctx.Done())
	}
	w.mu.Unlock()
	podF.Start(ctx.Done())
	kf.Start(ctx.Done())
	if len(s.Unread) > 0 {
		w.send(Error{fmt.Errorf("you may not list %s (RBAC): planned without them, as explain plans", strings.Join(s.Unread, ", "))})
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	// The sync marker goes through the same channel, after the initial adds.
	w.emit(Event{Kind: -1, Obj: s})
}

// emit queues an event for the batcher, unless the watcher is stopping.
func (w *Watcher) emit(e Event) {
	select {
	case w.events <- e:
	case <-w.ctx.Done():
	}
}

// Ensure starts watching gvr if its CRD is now served (e.g. NodeClaims,
// after the CRDs were installed while the TUI runs). The initial objects
// arrive as ordinary events.
func (w *Watcher) Ensure(gvr schema.GroupVersionResource) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dynamic[gvr] || w.dynF == nil {
		return nil
	}
	ok, err := w.served(gvr)
	if err != nil || !ok {
		return err
	}
	kind := NodeClaim
	switch gvr {
	case NodePools:
		kind = NodePool
	case KarpenterNodePools:
		kind = KarpenterNodePool
	case Commitments:
		kind = Commitment
	}
	w.dynamic[gvr] = true
	w.add(w.dynF.ForResource(gvr).Informer(), kind, gvr.Resource+"."+gvr.Group)
	w.dynF.Start(w.ctx.Done())
	return nil
}

// served asks discovery whether the API server serves gvr.
func (w *Watcher) served(gvr schema.GroupVersionResource) (bool, error) {
	res, err := w.clients.Kube.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	return slices.ContainsFunc(res.APIResources, func(a metav1.APIResource) bool { return a.Name == gvr.Resource }), nil
}

// add registers the event handlers of one informer.
func (w *Watcher) add(inf cache.SharedIndexInformer, kind Kind, what string) cache.InformerSynced {
	return w.addKeyed(inf, kind, what, "")
}

// addKeyed is add with every event key prefixed.
func (w *Watcher) addKeyed(inf cache.SharedIndexInformer, kind Kind, what, prefix string) cache.InformerSynced {
	_ = inf.SetTransform(stripManagedFields)
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		w.send(Error{fmt.Errorf("watching %s: %w", what, err)})
	})
	put := func(obj any) {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err == nil {
			w.emit(Event{Kind: kind, Key: prefix + key, Obj: obj})
		}
	}
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    put,
		UpdateFunc: func(_, obj any) { put(obj) },
		DeleteFunc: func(obj any) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err == nil {
				w.emit(Event{Kind: kind, Key: prefix + key})
			}
		},
	})
	if reg == nil {
		return inf.HasSynced
	}
	return reg.HasSynced
}

// batch gathers events and sends them every FlushInterval.
func (w *Watcher) batch(ctx context.Context) {
	var pending []Event
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-w.events:
			if s, ok := e.Obj.(Synced); ok && e.Kind == -1 {
				if len(pending) > 0 {
					w.send(Batch{pending})
					pending = nil
				}
				w.send(s)
				continue
			}
			pending = append(pending, e)
			if !armed {
				timer.Reset(FlushInterval)
				armed = true
			}
		case <-timer.C:
			armed = false
			if len(pending) > 0 {
				w.send(Batch{pending})
				pending = nil
			}
		}
	}
}

// stripManagedFields drops what the TUI never reads and thousands of pods
// would otherwise keep in memory twice (informer cache and program).
func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
