package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// benchmark is the runs of one benchmark: its metrics in the order they
// first appeared, each with one value per run that reported it.
type benchmark struct {
	pkg, name string
	metrics   []*metric
}

type metric struct {
	unit   string
	values []float64
}

// input is what parse found.
type input struct {
	benchmarks []*benchmark // in the order they first appeared
	failed     bool         // a FAIL line: a test or benchmark failed
	problems   []string     // malformed result lines, with their line number
}

// parse reads go test -bench output. A result line is a benchmark name
// ("Benchmark" then nothing or a character that is not a lower-case
// letter), an iteration count, and value-unit pairs; a configuration line
// "pkg: path" names the package of the results that follow. Everything else
// is skipped.
func parse(r io.Reader) (*input, error) {
	in := &input{}
	index := map[[2]string]*benchmark{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg:"); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if line == "FAIL" || strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(strings.TrimSpace(line), "--- FAIL") {
			in.failed = true
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !isBenchmarkName(fields[0]) {
			continue
		}
		if _, err := strconv.ParseUint(fields[1], 10, 64); err != nil {
			// The name alone, its results on a later line after the
			// benchmark's own output: nothing to take.
			continue
		}
		pairs := fields[2:]
		if len(pairs)%2 != 0 {
			in.problems = append(in.problems, fmt.Sprintf("line %d: a value without its unit, %q, skipped", lineNo, pairs[len(pairs)-1]))
			pairs = pairs[:len(pairs)-1]
		}
		key := [2]string{pkg, fields[0]}
		b := index[key]
		for i := 0; i < len(pairs); i += 2 {
			v, err := strconv.ParseFloat(pairs[i], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				in.problems = append(in.problems, fmt.Sprintf("line %d: %q is not a value for %s, skipped", lineNo, pairs[i], pairs[i+1]))
				continue
			}
			if b == nil {
				b = &benchmark{pkg: pkg, name: fields[0]}
				index[key] = b
				in.benchmarks = append(in.benchmarks, b)
			}
			b.add(pairs[i+1], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return in, nil
}

func isBenchmarkName(s string) bool {
	rest, ok := strings.CutPrefix(s, "Benchmark")
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLower(r)
}

func (b *benchmark) add(unit string, v float64) {
	for _, m := range b.metrics {
		if m.unit == unit {
			m.values = append(m.values, v)
			return
		}
	}
	b.metrics = append(b.metrics, &metric{unit: unit, values: []float64{v}})
}

// spread returns the least, median and greatest of values (not empty); the
// median of an even number of values is the mean of the middle two.
func spread(values []float64) (lo, median, hi float64) {
	s := slices.Sorted(slices.Values(values))
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], median, s[n-1]
}

// writeTable writes the spreads as a markdown table, with a package column
// if the benchmarks come from more than one package.
func writeTable(w io.Writer, benchmarks []*benchmark) error {
	manyPkgs := slices.ContainsFunc(benchmarks, func(b *benchmark) bool { return b.pkg != benchmarks[0].pkg })
	bw := bufio.NewWriter(w)
	if manyPkgs {
		bw.WriteString("| package | benchmark | metric | min | median | max | n |\n|---|---|---|---:|---:|---:|---:|\n")
	} else {
		bw.WriteString("| benchmark | metric | min | median | max | n |\n|---|---|---:|---:|---:|---:|\n")
	}
	for _, b := range benchmarks {
		for _, m := range b.metrics {
			lo, median, hi := spread(m.values)
			if manyPkgs {
				fmt.Fprintf(bw, "| %s ", b.pkg)
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %d |\n", b.name, m.unit, format(lo), format(median), format(hi), len(m.values))
		}
	}
	return bw.Flush()
}

// format prints v with as many decimals as go test prints a metric of its
// size, so that the table claims no more precision than its input had.
func format(v float64) string {
	var decimals int
	switch y := math.Abs(v); {
	case y == 0 || y >= 999.95:
		decimals = 0
	case y >= 99.995:
		decimals = 1
	case y >= 9.9995:
		decimals = 2
	case y >= 0.99995:
		decimals = 3
	case y >= 0.099995:
		decimals = 4
	case y >= 0.0099995:
		decimals = 5
	case y >= 0.00099995:
		decimals = 6
	default:
		decimals = 7
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
