package tui

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
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
	dir := t.TempDir()
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: api
        resources: {requets: {cpu: "1"}}
`
	if err := os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := snapshot.Read([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Warnings) == 0 {
		t.Fatal("the typo requets gave no warning")
	}
	m := New(Options{Manifests: ms, Catalog: explain.Catalog{Region: "us-east-1"}, Context: "offline", Now: func() time.Time { return now }})
	drive(t, m, tea.WindowSizeMsg{Width: 240, Height: 30}, m.Init()())
	header, _, _ := strings.Cut(screen(m), "\n")
	want := "1 warning (explain prints it)"
	if n := len(ms.Warnings); n > 1 {
		want = strconv.Itoa(n) + " warnings (explain prints them)"
	}
	mustContain(t, header, want)
}
