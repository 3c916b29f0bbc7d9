package main

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/daemon/config"
)

// memoryLimit works out the soft limit of the Go heap sifd runs with, and
// where it comes from: --memory-limit, else the configuration file's
// memory_limit, else $GOMEMLIMIT (which the Go runtime has applied
// itself: it is left as it is, and limit is 0), else
// config.DefaultMemoryLimit. A limit of -1 is none.
func memoryLimit(fl *pflag.FlagSet, flagValue string, fc config.File, env string) (limit int64, source string, err error) {
	switch {
	case fl.Changed("memory-limit"):
		n, err := config.ParseSize(flagValue)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit %w", err)
		}
		if n >= 0 && n < config.MinMemoryLimit {
			return 0, "", fmt.Errorf("--memory-limit %s: less than the least sifd runs in (%d MiB); \"unlimited\" for no limit", flagValue, config.MinMemoryLimit>>20)
		}
		return n, "--memory-limit", nil
	case fc.MemoryLimit != 0:
		return fc.MemoryLimit, fc.Path, nil
	case env != "":
		return 0, "GOMEMLIMIT", nil
	}
	return config.DefaultMemoryLimit, "default", nil
}

// applyMemoryLimit sets the Go heap's soft limit (see memoryLimit) and
// logs it.
func applyMemoryLimit(fl *pflag.FlagSet, flagValue string, fc config.File, log *slog.Logger) error {
	limit, source, err := memoryLimit(fl, flagValue, fc, os.Getenv("GOMEMLIMIT"))
	if err != nil {
		return err
	}
	switch {
	case limit < 0:
		debug.SetMemoryLimit(math.MaxInt64)
	case limit > 0:
		debug.SetMemoryLimit(limit)
	}
	now := debug.SetMemoryLimit(-1)
	if now == math.MaxInt64 {
		log.Info("memory limit", "go_heap", "unlimited", "from", source)
	} else {
		log.Info("memory limit", "go_heap_mib", now>>20, "from", source)
	}
	return nil
}
