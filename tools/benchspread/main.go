// Command benchspread turns the output of `go test -bench` run several
// times (-count=N) into the least, median and greatest value of every
// metric of every benchmark, as a markdown table, so that each figure
// published in BENCHMARKS.md and docs/ comes from one pipeline:
//
//	go test -run '^$' -bench BenchmarkCallLatency -benchmem -count=5 ./test/bench | go run ./tools/benchspread
//
// The table has a row per benchmark and metric, in the order they first
// appear: benchmark, metric, min, median, max, n (the number of runs). A
// benchmark's name is kept as go test prints it, with its -GOMAXPROCS
// suffix, so that runs with different -cpu values stay apart. When the
// input covers more than one package, a first column names the package.
//
// Lines that are not benchmark results (goos:, PASS, ok, logs) are skipped.
// benchspread exits with status 1 when the input has no results or reports
// a failure (a pipe hides go test's own exit status), and says on stderr
// which metrics have fewer than 3 runs, the least the project publishes.
//
// The parser is written here rather than taken from
// golang.org/x/perf/benchfmt. Tried (go get + go mod tidy, graph pruning
// keeps x/perf's Cloud, SQL and plotting requirements out): importing
// benchfmt adds x/perf, which has no tagged release, and go-moremath to
// go.mod and raises golang.org/x/text from v0.14.0 to v0.42.0, which, this
// module being a library, would become its users' minimum too, all for a
// developer's tool. benchfmt would also do only the parsing; the benchmark
// line format it parses is small and stable
// (https://go.dev/design/14313-benchmark-format).
package main

import (
	"fmt"
	"os"
)

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchspread:", err)
		os.Exit(1)
	}
	for _, p := range res.problems {
		fmt.Fprintln(os.Stderr, "benchspread:", p)
	}
	if len(res.benchmarks) == 0 {
		fmt.Fprintln(os.Stderr, "benchspread: no benchmark results on standard input")
		os.Exit(1)
	}
	if err := writeTable(os.Stdout, res.benchmarks); err != nil {
		fmt.Fprintln(os.Stderr, "benchspread:", err)
		os.Exit(1)
	}
	for _, b := range res.benchmarks {
		for _, m := range b.metrics {
			if len(m.values) < 3 {
				fmt.Fprintf(os.Stderr, "benchspread: %s %s: %d run(s), fewer than 3\n", b.name, m.unit, len(m.values))
			}
		}
	}
	if res.failed {
		fmt.Fprintln(os.Stderr, "benchspread: the input reports a failure (FAIL)")
		os.Exit(1)
	}
}
