package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseAndPrint(t *testing.T) {
	in := `goos: linux
BenchmarkSuites/suite=b/pods=1000-2   	3	280089727 ns/op	1.47 cost/LB	0.65 cost/greedy	280.1 ms	3570 pods/s
    bench_test.go:99: a log line
BenchmarkSuites/suite=a/pods=1000
    bench_test.go:52: topology suite; set RIGHTSIZE_BENCH_TOPOLOGY=1 to run it
BenchmarkSuites/suite=e/problems=200-2	1	132855626 ns/op	1.031 cost/opt	2451 pods
PASS
`
	rows, failed, err := parse(strings.NewReader(in))
	if err != nil || failed {
		t.Fatalf("parse: %v, failed %v", err, failed)
	}
	if len(rows) != 2 || rows[0].suite != "b" || rows[0].pods != "1000" || rows[0].metrics["cost/LB"] != 1.47 {
		t.Fatalf("rows = %+v", rows)
	}
	if rows[1].suite != "e (200 problems)" || rows[1].pods != "2451" {
		t.Fatalf("tiny row = %+v", rows[1])
	}
	var out bytes.Buffer
	print(&out, rows)
	for _, want := range []string{"cost÷LB", "1.470", "0.650", "1.031", "geomean b–d"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if _, failed, _ := parse(strings.NewReader("--- FAIL: BenchmarkSuites\nFAIL\n")); !failed {
		t.Error("a FAIL line was not reported")
	}
}
