package tui

import (
	"strings"
	"testing"
)

// TestHeaderSaysWhatTheInputLacked checks that manifests without a
// NodePool or DaemonSets say in the header that they were planned with the
// default NodePool and the EKS DaemonSets, and that the detail view (enter)
// gives explain's sentences for both.
func TestHeaderSaysWhatTheInputLacked(t *testing.T) {
	m := offlineModel(t)
	s := screen(m)
	header, _, _ := strings.Cut(s, "\n")
	mustContain(t, header, "planned with default NodePool + EKS DaemonSets")
	drive(t, m, keys("enter")...)
	mustContain(t, screen(m), "NodePool: none in the input; planned with Karpenter's recommended general-purpose NodePool",
		"DaemonSets: none in the input; every node counts the ones EKS runs on each node")
}
