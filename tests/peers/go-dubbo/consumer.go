// The dubbo-go 3.3 consumer mode: calls one String method of a Java interface straight at a
// provider (dubbo:// or tri://, Hessian2, non-IDL), the way a dubbo-go application calls a Java
// provider, with calls in flight and latency statistics for throughput comparisons.
//
// Usage: go-dubbo-peer consumer --url dubbo://H:P|tri://H:P [--interface I] [--version V]
// [--method M] [--arg S] [--repeat N] [--concurrency C] [--warmup W] [--timeout-ms T]
//
// Prints one JSON line: {"client","protocol","calls","errors","concurrency","warmup",
// "elapsed_ms","calls_per_sec","p50_us","p99_us","max_us","cpu_us_per_call","result"}; exit 0 when every call
// succeeded, 2 otherwise.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"dubbo.apache.org/dubbo-go/v3/client"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/logger"
)

// processCPU is this process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func consumerMain(args []string) int {
	fs := flag.NewFlagSet("consumer", flag.ExitOnError)
	target := fs.String("url", "", "dubbo://H:P or tri://H:P")
	iface := fs.String("interface", "com.example.peer.DemoService", "interface")
	version := fs.String("version", "", "service version")
	method := fs.String("method", "sayHello", "a method taking and returning one String")
	arg := fs.String("arg", "go", "the String argument")
	repeat := fs.Int("repeat", 1, "measured calls")
	concurrency := fs.Int("concurrency", 1, "calls in flight")
	warmup := fs.Int("warmup", 0, "calls before measuring")
	timeoutMs := fs.Int("timeout-ms", 5000, "call timeout")
	_ = fs.Parse(args)
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" || (u.Scheme != "dubbo" && u.Scheme != "tri") {
		fmt.Fprintln(os.Stderr, "go-dubbo-peer consumer: --url dubbo://H:P or tri://H:P")
		return 2
	}
	_ = logger.SetLoggerLevel("error")
	opts := []client.ClientOption{
		client.WithClientSerialization(constant.Hessian2Serialization),
		client.WithClientRetries(0),
	}
	if u.Scheme == "dubbo" {
		opts = append(opts, client.WithClientProtocolDubbo())
	} else {
		opts = append(opts, client.WithClientProtocolTriple())
	}
	cli, err := client.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-dubbo-peer consumer:", err)
		return 2
	}
	refOpts := []client.ReferenceOption{client.WithURL(*target)}
	if u.Scheme == "tri" {
		// Hessian2 in Triple's wrapper, the way a Java interface without IDL is served.
		refOpts = append(refOpts, client.WithIDL(constant.NONIDL))
	}
	if *version != "" {
		refOpts = append(refOpts, client.WithVersion(*version))
	}
	conn, err := cli.Dial(*iface, refOpts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-dubbo-peer consumer:", err)
		return 2
	}
	call := func() (string, error) {
		var resp string
		// Per call: without it dubbo-go 3.3.2 puts an empty "timeout" attachment on every
		// invocation, its Dubbo2 invoker fails to parse it and sends timeout=0, and a Java
		// provider's ProfilerServerFilter then logs a warning for every call.
		err := conn.CallUnary(context.Background(), []any{*arg}, &resp, *method,
			client.WithCallRequestTimeout(time.Duration(*timeoutMs)*time.Millisecond))
		return resp, err
	}
	var result string
	var lastErr error
	run := func(n int, record bool) ([]time.Duration, int64, time.Duration) {
		var next, errs int64
		lat := make([][]time.Duration, *concurrency)
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < *concurrency; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for atomic.AddInt64(&next, 1) <= int64(n) {
					t := time.Now()
					r, err := call()
					d := time.Since(t)
					if err != nil {
						atomic.AddInt64(&errs, 1)
						lastErr = err
						continue
					}
					if record {
						lat[w] = append(lat[w], d)
					}
					if w == 0 {
						result = r
					}
				}
			}(w)
		}
		wg.Wait()
		elapsed := time.Since(start)
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		return all, errs, elapsed
	}
	if *warmup > 0 {
		run(*warmup, false)
	}
	cpuStart := processCPU()
	all, errs, elapsed := run(*repeat, true)
	cpu := processCPU() - cpuStart
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)-1))
		return float64(all[i].Microseconds())
	}
	max := 0.0
	if len(all) > 0 {
		max = float64(all[len(all)-1].Microseconds())
	}
	out := map[string]any{
		"client":          "dubbo-go 3.3.2",
		"protocol":        u.Scheme,
		"calls":           *repeat,
		"errors":          errs,
		"concurrency":     *concurrency,
		"warmup":          *warmup,
		"elapsed_ms":      float64(elapsed.Microseconds()) / 1000,
		"calls_per_sec":   float64(*repeat) / elapsed.Seconds(),
		"p50_us":          pct(0.50),
		"p99_us":          pct(0.99),
		"max_us":          max,
		"cpu_us_per_call": float64(cpu.Microseconds()) / float64(*repeat),
		"result":          result,
	}
	if lastErr != nil {
		out["error"] = lastErr.Error()
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	if errs > 0 {
		return 2
	}
	return 0
}
