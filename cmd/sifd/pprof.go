package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// Sampling rates of the block and mutex profiles while --pprof serves: one
// blocking event per 100 µs spent blocked on average, one contended mutex
// in 10. Both cost little at these rates and nothing without --pprof.
const (
	pprofBlockRate     = 100_000 // nanoseconds
	pprofMutexFraction = 10
)

// servePprof serves Go's runtime profiles (net/http/pprof, under
// /debug/pprof/) on addr, which must be a loopback address, until ctx is
// done; it also turns on the block and mutex profiles. The listener is
// opened before servePprof returns, so a bad address is an error at once;
// the serving goroutine logs its own failures to log.
func servePprof(ctx context.Context, addr string, log *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof %q: want HOST:PORT on the loopback, such as 127.0.0.1:6060: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--pprof %q: %q is not a loopback address; the profiles are served only on 127.0.0.1, ::1 or localhost", addr, host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	runtime.SetBlockProfileRate(pprofBlockRate)
	runtime.SetMutexProfileFraction(pprofMutexFraction)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Warn("serving runtime profiles: a debugging aid, not for production", "addr", ln.Addr().String())
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof listener", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	return nil
}
