package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
)

// logFlags are --log-level and --log-format, on serve and dev (which hands them to its nodes).
type logFlags struct{ level, format string }

func (l *logFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&l.level, "log-level", "info", "least severe log level written: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log line format: text (key=value) or json (one object per line)")
}

// logger builds the daemon's logger writing to w, or says which flag is wrong.
func (l logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch l.level {
	case "debug":
		level = slog.LevelDebug
	case "info", "":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.format)
}

// args passes the flags on to a child `queryflux serve`.
func (l logFlags) args() []string {
	return []string{"--log-level", l.level, "--log-format", l.format}
}
