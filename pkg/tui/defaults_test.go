package tui

import (
	"strconv"
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

// TestHeaderCountsTheInputsWarnings: a manifest with an unknown field is
// planned with a warning, which the header counts (explain prints it).
func TestHeaderCountsTheInputsWarnings(t *testing.T) {
	// A typo: the pod requests nothing, and the decoder warns.
	m := offlineModelOf(t, strings.Replace(apiDeployment("", 2), "requests:", "requets:", 1), 240)
	n := len(m.rep.Warnings)
	if n == 0 {
		t.Fatal("the typo requets gave no warning")
	}
	want := "1 warning (explain prints it)"
	if n > 1 {
		want = strconv.Itoa(n) + " warnings (explain prints them)"
	}
	header, _, _ := strings.Cut(screen(m), "\n")
	mustContain(t, header, want)
}
