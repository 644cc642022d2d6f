package snapshot

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// checkFastYAML fails the test when fastYAMLToJSON takes data and gives
// other JSON than sigs.k8s.io/yaml's YAMLToJSONStrict (the slow path), or
// takes data the slow path rejects. It reports whether the fast path took
// it.
func checkFastYAML(t *testing.T, data []byte) bool {
	t.Helper()
	fast, ok := fastYAMLToJSON(data)
	if !ok {
		return false
	}
	slow, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatalf("fast path took YAML the slow path rejects (%v):\n%s", err, data)
	}
	var a, b any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(fast, &a); err != nil {
		t.Fatalf("fast path gave invalid JSON %s: %v\n%s", fast, err, data)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(slow, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("fast path gave %s, slow path %s, from:\n%s", fast, slow, data)
	}
	// Keys come in the slow path's order too (strict-field warnings are
	// in JSON order); without characters encoding/json escapes as HTML
	// the bytes are the same.
	if !bytes.ContainsAny(data, "<>&") && !bytes.Equal(fast, slow) {
		t.Fatalf("fast path gave %s, slow path %s, from:\n%s", fast, slow, data)
	}
	return true
}

// TestFastYAMLToJSON: the YAML yaml.Marshal writes for Kubernetes objects
// takes the fast path and gives the slow path's JSON; everything outside
// the subset, or that YAML 1.1 reads as another type, is left to the slow
// path.
func TestFastYAMLToJSON(t *testing.T) {
	tests := []struct {
		name, in string
		fast     bool
	}{
		{"a pod as yaml.Marshal writes it", `apiVersion: v1
kind: Pod
metadata:
  generation: 1
  labels:
    my-label: f
    testing/cluster: unspecified
  name: generic-0
  namespace: default
  uid: 012fbd53-22d1-48c6-930b-0dd52edbec72
spec:
  containers:
  - image: public.ecr.aws/eks-distro/kubernetes/pause:3.2
    name: beetlepale-4-w2epoctqyj
    ports:
    - containerPort: 80
      protocol: TCP
    resources:
      requests:
        cpu: "1"
        memory: 512Mi
  - name: second
    resources: {}
  resources: {}
  tolerations: []
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchExpressions:
              - key: app
                operator: In
                values:
                  - web
                  - 'api'
          topologyKey: kubernetes.io/hostname
status:
  phase: Pending
`, true},
		{"comment lines and blank lines", "# head\napiVersion: v1\n\n  # indented\nkind: Pod\n", true},
		{"null, booleans, ints", "a:\nb: true\nc: False\nd: -12\ne: 0\nf: null\ng: ~\n", false},
		{"booleans and ints without ~", "a:\nb: true\nc: False\nd: -12\ne: 0\nf: null\ng: 'yes'\nh: \"no\"\n", true},
		{"yes and on are booleans", "a: yes\nb: on\nc: Off\nd: N\n", true},
		{"quantities and names that start with digits", "a: 500m\nb: 1Gi\nc: 3E\nd: 0.5Gi\ne: 1e\n", true},
		{"a sequence of scalars in the key's column", "a:\n- x\n- 2\n-\nb: c\n", true},
		{"a date", "a: 2024-01-02\n", false},
		{"a float", "a: 0.5\n", false},
		{"an exponent", "a: 1e3\n", false},
		{"hex", "a: 0x1F\n", false},
		{"octal", "a: 0755\n", false},
		{"binary", "a: 0b101\n", false},
		{"minus binary", "a: -0b101\n", false},
		{"a name that starts like binary", "a: 0b39d9ce-cfe8\nb: -0b2\n", true},
		{"minus zero", "a: -0\n", false},
		{"too big an int", "a: 18446744073709551615\n", false},
		{"a flow mapping", "metadata: {name: p}\n", false},
		{"a flow sequence", "a: [1, 2]\n", false},
		{"a block scalar", "a: |\n  x\n", false},
		{"an anchor", "a: &x 1\nb: *x\n", false},
		{"a tag", "a: !!str 1\n", false},
		{"a trailing comment", "a: b # c\n", false},
		{"a duplicate key", "a: 1\na: 2\n", false},
		{"a key YAML reads as a boolean", "on: 1\n", false},
		{"a numeric key", "1: a\n", false},
		{"a quoted key", "'a': 1\n", false},
		{"a multi-line plain scalar", "a: b\n  c\n", false},
		{"an escape", "a: \"b\\n\"\n", false},
		{"a tab", "a:\tb\n", false},
		{"non-ASCII", "a: é\n", false},
		{"a CR", "a: b\r\n", false},
		{"a top-level sequence", "- a\n", false},
		{"a top-level scalar", "a\n", false},
		{"a mapping value on the key's line", "a: b: c\n", false},
		{"a sequence as a mapping value", "a: - b\n", false},
		{"a nested sequence on one line", "a:\n- - b\n", false},
		{"a key with a colon", "a:b: c\n", false},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", false},
		{"a directive", "%YAML 1.1\na: b\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkFastYAML(t, []byte(tt.in)); got != tt.fast {
				t.Errorf("fast path taken: %v, want %v", got, tt.fast)
			}
		})
	}
}

// FuzzFastYAMLToJSON: whatever the fast path takes, it converts as the
// slow path does.
func FuzzFastYAMLToJSON(f *testing.F) {
	for _, data := range seedFiles(f) {
		for _, doc := range splitYAML(data) {
			f.Add(doc.data)
		}
	}
	f.Add([]byte("a:\n- b: 1\n  c:\n  - d\n  - -1\ne: {}\nf: []\ng: 'x y'\n"))
	f.Add([]byte("a: 012fbd53-22d1\nb: 2024x\nc: -foo\nd: /var/log\ne: a=b,c@d+e\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if strings.Contains(string(data), "\x00") {
			return
		}
		checkFastYAML(t, data)
	})
}

// manyKeys is a ConfigMap of n keys, and a Pod, as YAML.
func manyKeys(n int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := range n {
		fmt.Fprintf(&b, "  k%07d: v\n", i)
	}
	return b.Bytes()
}

// deepFlow is a Pod whose annotations nest n flow sequences deep.
func deepFlow(n int) []byte {
	return []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n")
}

// BenchmarkFastYAMLManyKeys times the fast path on a mapping of a million
// keys: duplicate keys are found with a set, so it is linear (it was
// quadratic: 100k keys took 27 s, 1M did not end in 11 minutes).
func BenchmarkFastYAMLManyKeys(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		data := manyKeys(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := fastYAMLToJSON(data); !ok {
					b.Fatal("fast path declined")
				}
			}
		})
	}
}

// BenchmarkDecodeHostile times Decode on a million keys and on 100,000
// levels of nesting (refused at the decoders' 10,000).
func BenchmarkDecodeHostile(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{{"1M keys", manyKeys(1_000_000)}, {"100k deep", deepFlow(100_000)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				_ = Decode("in.yaml", tc.data, &Manifests{})
			}
		})
	}
}
