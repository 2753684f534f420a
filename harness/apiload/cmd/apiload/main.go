// Command apiload writes a state file of generated resources and loads a
// running gitaso's API at a constant rate:
//
//	apiload gen -state /tmp/load/gitaso.db -n 10000
//	apiload run -url 'http://127.0.0.1:18080/api/v1/resources?limit=500' -rate 500 -duration 30s -pid $PID
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/gitaso/gitaso/harness/apiload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: apiload gen|run [flags]")
	}
	fs := flag.NewFlagSet("apiload "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "gen":
		path := fs.String("state", "gitaso.db", "state file to write")
		n := fs.Int("n", 10000, "resources")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return apiload.Generate(ctx, *path, *n)
	case "run":
		var o apiload.Options
		fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080/api/v1/resources?limit=500", "URL to GET")
		fs.Float64Var(&o.Rate, "rate", 500, "requests per second")
		fs.DurationVar(&o.Duration, "duration", 30*time.Second, "how long to send")
		fs.IntVar(&o.MaxInFlight, "max-in-flight", 1024, "requests (and connections) out at once")
		fs.BoolVar(&o.Gzip, "gzip", false, "ask for gzip answers")
		fs.IntVar(&o.PID, "pid", 0, "process whose memory is read (/proc/PID/status); 0: apiload's own")
		fs.DurationVar(&o.Settle, "settle", 2*time.Second, "wait after the load before reading the memory again")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		res, err := apiload.Run(ctx, o)
		fmt.Println(res)
		return err
	}
	return fmt.Errorf("unknown subcommand %q: want gen or run", args[0])
}
