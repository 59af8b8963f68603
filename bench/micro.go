package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Micro is one BenchmarkMicro* result: the median over -count runs.
type Micro struct {
	Name     string `json:"name"`
	Package  string `json:"package"`
	NsOp     num    `json:"ns_per_op"`
	BytesOp  num    `json:"bytes_per_op"`
	AllocsOp num    `json:"allocs_per_op"`
	Runs     int    `json:"runs"`
}

// microPackages hold the BenchmarkMicro* functions (proxy's
// micro_bench_test.go files); `go test -bench` runs them, so they stay
// runnable by hand and comparable with benchstat.
var microPackages = []string{"./proxy/", "./proxy/classify/"}

// runMicro runs the micro benchmarks and returns them with the raw output
// (benchstat's input format).
func runMicro(ctx context.Context, count int, benchtime string) ([]Micro, string, error) {
	args := append([]string{"test", "-run", "^$", "-bench", "^BenchmarkMicro", "-benchmem",
		"-count", strconv.Itoa(count), "-benchtime", benchtime}, microPackages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, out.String(), fmt.Errorf("go test -bench: %v\n%s", err, out.String())
	}
	return parseBench(out.String()), out.String(), nil
}

// parseBench reads `go test -bench -benchmem` output.
func parseBench(out string) []Micro {
	type acc struct {
		pkg              string
		ns, bytes, alloc []float64
	}
	byName := map[string]*acc{}
	var order []string
	pkg := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		a := byName[name]
		if a == nil {
			a = &acc{pkg: pkg}
			byName[name] = a
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				a.ns = append(a.ns, v)
			case "B/op":
				a.bytes = append(a.bytes, v)
			case "allocs/op":
				a.alloc = append(a.alloc, v)
			}
		}
	}
	var ms []Micro
	for _, name := range order {
		a := byName[name]
		ms = append(ms, Micro{Name: strings.TrimPrefix(name, "BenchmarkMicro"), Package: a.pkg,
			NsOp: num(median(a.ns)), BytesOp: num(median(a.bytes)), AllocsOp: num(median(a.alloc)), Runs: len(a.ns)})
	}
	return ms
}
