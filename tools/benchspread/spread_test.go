package main

import (
	"strings"
	"testing"
)

func TestSpread(t *testing.T) {
	const header = "| benchmark | metric | min | median | max | n |\n|---|---|---:|---:|---:|---:|\n"
	for _, tc := range []struct {
		name     string
		input    string
		want     string // the table; "" when there are no results
		failed   bool
		problems int
	}{
		{
			name: "three runs, go test's other lines skipped",
			input: `goos: linux
goarch: amd64
pkg: github.com/resilientmcp/resilientmcp
cpu: AMD EPYC
BenchmarkCallLatency/era=SessionEra/ctx=background-2   	    5000	    223847 ns/op	       5.000 extra-allocs/call	         1.151 x-raw
BenchmarkCallLatency/era=SessionEra/ctx=background-2   	    5000	    201363 ns/op	       5.000 extra-allocs/call	         0.9942 x-raw
BenchmarkCallLatency/era=SessionEra/ctx=background-2   	    5000	    345436 ns/op	       5.000 extra-allocs/call	         1.090 x-raw
PASS
ok  	github.com/resilientmcp/resilientmcp	12.345s
`,
			want: header +
				"| BenchmarkCallLatency/era=SessionEra/ctx=background-2 | ns/op | 201363 | 223847 | 345436 | 3 |\n" +
				"| BenchmarkCallLatency/era=SessionEra/ctx=background-2 | extra-allocs/call | 5.000 | 5.000 | 5.000 | 3 |\n" +
				"| BenchmarkCallLatency/era=SessionEra/ctx=background-2 | x-raw | 0.9942 | 1.090 | 1.151 | 3 |\n",
		},
		{
			name: "an even number of runs: the median is the mean of the middle two",
			input: `BenchmarkX 1 1.000 x-raw
BenchmarkX 1 4.000 x-raw
BenchmarkX 1 2.000 x-raw
BenchmarkX 1 3.000 x-raw
`,
			want: header + "| BenchmarkX | x-raw | 1.000 | 2.500 | 4.000 | 4 |\n",
		},
		{
			name: "mixed benchmarks interleaved, as -count runs sub-benchmarks; each in the order first seen",
			input: `BenchmarkT/goroutines=1-2 10 100 ns/op 9093 calls/s
BenchmarkT/goroutines=16-2 10 50 ns/op 16835 calls/s
BenchmarkT/goroutines=1-2 10 120 ns/op 8849 calls/s
BenchmarkT/goroutines=16-2 10 40 ns/op 14111 calls/s
`,
			want: header +
				"| BenchmarkT/goroutines=1-2 | ns/op | 100.0 | 110.0 | 120.0 | 2 |\n" +
				"| BenchmarkT/goroutines=1-2 | calls/s | 8849 | 8971 | 9093 | 2 |\n" +
				"| BenchmarkT/goroutines=16-2 | ns/op | 40.00 | 45.00 | 50.00 | 2 |\n" +
				"| BenchmarkT/goroutines=16-2 | calls/s | 14111 | 15473 | 16835 | 2 |\n",
		},
		{
			name: "-cpu suffixes are different benchmarks; no suffix (GOMAXPROCS=1) is one too",
			input: `BenchmarkA 1 10.00 ns/op
BenchmarkA-2 1 20.00 ns/op
BenchmarkA-4 1 30.00 ns/op
BenchmarkA-2 1 22.00 ns/op
`,
			want: header +
				"| BenchmarkA | ns/op | 10.00 | 10.00 | 10.00 | 1 |\n" +
				"| BenchmarkA-2 | ns/op | 20.00 | 21.00 | 22.00 | 2 |\n" +
				"| BenchmarkA-4 | ns/op | 30.00 | 30.00 | 30.00 | 1 |\n",
		},
		{
			name: "a metric missing from some runs counts only the runs that have it",
			input: `BenchmarkA 1 10.00 ns/op 3.000 x-raw
BenchmarkA 1 12.00 ns/op
BenchmarkA 1 11.00 ns/op 5.000 x-raw
`,
			want: header +
				"| BenchmarkA | ns/op | 10.00 | 11.00 | 12.00 | 3 |\n" +
				"| BenchmarkA | x-raw | 3.000 | 4.000 | 5.000 | 2 |\n",
		},
		{
			name: "no metrics: a result line with only the iteration count, the name alone, a name in lower case",
			input: `BenchmarkQuiet-2 	     100
BenchmarkLogs-2 	
some log line the benchmark printed
Benchmarking is not a benchmark 5 1.0 ns/op
`,
			want: "",
		},
		{
			name: "several packages: a package column; the same name in two packages is two benchmarks",
			input: `pkg: example.com/a
BenchmarkA-2 1 1.000 x-raw
pkg: example.com/b
BenchmarkA-2 1 2.000 x-raw
pkg: example.com/a
BenchmarkA-2 1 3.000 x-raw
`,
			want: "| package | benchmark | metric | min | median | max | n |\n|---|---|---|---:|---:|---:|---:|\n" +
				"| example.com/a | BenchmarkA-2 | x-raw | 1.000 | 2.000 | 3.000 | 2 |\n" +
				"| example.com/b | BenchmarkA-2 | x-raw | 2.000 | 2.000 | 2.000 | 1 |\n",
		},
		{
			name: "malformed pairs are reported and skipped, the rest of the line kept",
			input: `BenchmarkA 1 abc ns/op 1.500 x-raw 7
BenchmarkA 1 NaN ns/op 2.500 x-raw
`,
			want:     header + "| BenchmarkA | x-raw | 1.500 | 2.000 | 2.500 | 2 |\n",
			problems: 3,
		},
		{
			name: "a failure is noticed, the results before it kept",
			input: `BenchmarkA-2 1 1.000 x-raw
--- FAIL: BenchmarkB
    bench_test.go:12: broken
    --- FAIL: BenchmarkC/sub
FAIL
exit status 1
FAIL	example.com/a	0.5s
`,
			want:   header + "| BenchmarkA-2 | x-raw | 1.000 | 1.000 | 1.000 | 1 |\n",
			failed: true,
		},
		{
			name:  "large and small values, negative, exponent notation",
			input: "BenchmarkA 1 1.5e+06 calls/s 0.000123 s/op -2.000 extra-allocs/call 0 B/op\n",
			want: header +
				"| BenchmarkA | calls/s | 1500000 | 1500000 | 1500000 | 1 |\n" +
				"| BenchmarkA | s/op | 0.0001230 | 0.0001230 | 0.0001230 | 1 |\n" +
				"| BenchmarkA | extra-allocs/call | -2.000 | -2.000 | -2.000 | 1 |\n" +
				"| BenchmarkA | B/op | 0 | 0 | 0 | 1 |\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := parse(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			if len(in.benchmarks) > 0 {
				if err := writeTable(&got, in.benchmarks); err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != tc.want {
				t.Errorf("table:\n%s\nwant:\n%s", got.String(), tc.want)
			}
			if in.failed != tc.failed {
				t.Errorf("failed = %v, want %v", in.failed, tc.failed)
			}
			if len(in.problems) != tc.problems {
				t.Errorf("problems = %q, want %d", in.problems, tc.problems)
			}
		})
	}
}
