package testenv

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// NodeAnnotation is the annotation kwok selects the nodes it manages by; the
// plane's kwok manages only nodes with NodeAnnotation=fake.
const NodeAnnotation = "kwok.x-k8s.io/node"

// Node describes a fake node for AddNode.
type Node struct {
	Name string
	// Labels are added to the defaults (kubernetes.io/hostname, os, arch,
	// type=kwok) and override them.
	Labels map[string]string
	// Capacity is the node's capacity and allocatable. Missing cpu, memory or
	// pods default to 4, 16Gi and 110.
	Capacity corev1.ResourceList
	// Taints are set on the node spec.
	Taints []corev1.Taint
}

// AddNode creates a Node that kwok manages (it carries NodeAnnotation=fake):
// kwok marks it Ready, keeps its lease and heartbeats, and runs the pods the
// scheduler binds to it. AddNode returns once the node is created; use
// WaitNodeReady to wait for kwok.
func (e *Env) AddNode(ctx context.Context, n Node) (*corev1.Node, error) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	maps.Copy(capacity, n.Capacity)
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
	}
	maps.Copy(labels, n.Labels)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   n.Name,
			Labels: labels,
			Annotations: map[string]string{
				NodeAnnotation:                 "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    labels["kubernetes.io/arch"],
				OperatingSystem: labels["kubernetes.io/os"],
				KubeletVersion:  "fake",
			},
		},
	}
	// The status goes in the create, as a kubelet registers a node: the
	// API server keeps it, and kwok's first stage renders from this create.
	created, err := e.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("testenv: create node %s: %w", n.Name, err)
	}
	return created, nil
}

// WaitNodeReady waits until the node's Ready condition is True.
func (e *Env) WaitNodeReady(ctx context.Context, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Message)
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		last = "no Ready condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("testenv: node %s not Ready within %s: %s", name, timeout, last)
	}
	return nil
}
