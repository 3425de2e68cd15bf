package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/urfave/cli/v2"
)

// The admin commands talk to the cluster through the Go client: `cluster` and `stream`
// commands through a Client from client.Open, which needs no leader and opens no session
// (status and membership requests are not invocations, and a cluster without a leader
// must still answer `cluster status`); `invoke` through client.Dial.

// maxDialTimeout caps the time one connection attempt of the Go client may take, so it
// tries the other addresses within --timeout.
const maxDialTimeout = 2 * time.Second

// commandContext returns the context of one admin command: c's, ended after --timeout.
func commandContext(c *cli.Context) (context.Context, context.CancelFunc, error) {
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, nil, fmt.Errorf("--timeout %v: want a positive duration", timeout)
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	return ctx, cancel, nil
}

// clientConfig returns the Go client's config for the cluster at --addr: the command's
// context bounds the retries, --timeout each attempt; TLS from --certs-dir and --user,
// or plaintext with --insecure.
func clientConfig(c *cli.Context) (client.Config, error) {
	timeout := c.Duration("timeout")
	cfg := client.Config{
		Addrs:          c.StringSlice("addr"),
		ClusterID:      c.String("cluster-id"),
		DialTimeout:    min(timeout, maxDialTimeout),
		RequestTimeout: timeout,
		MaxRetries:     -1, // the context bounds the retries
	}
	var err error
	cfg.TLS, cfg.Insecure, err = clientTLS(c)
	return cfg, err
}

// clientTLS reads the connection security flags: --certs-dir (or $LOCKSTEP_CERTS_DIR)
// with --user, or --insecure (or $LOCKSTEP_INSECURE). On the command line the two exclude
// each other; one given there wins over the environment's other, and in the environment
// --insecure's variable wins over the certificates directory's (exported for node and
// cert commands too).
func clientTLS(c *cli.Context) (*tls.Config, bool, error) {
	dir, insecure := c.String("certs-dir"), c.Bool("insecure")
	envInsecure, _ := strconv.ParseBool(os.Getenv(profile.EnvInsecure))
	cmdDir := dir != "" && dir != os.Getenv(certsDirEnv)
	cmdInsecure := insecure && !envInsecure
	switch {
	case cmdDir && cmdInsecure:
		return nil, false, fmt.Errorf("--certs-dir and --insecure: give one of them")
	case cmdInsecure || (insecure && !cmdDir):
		return nil, true, nil
	case dir == "":
		return nil, false, fmt.Errorf("no certificates: give --certs-dir (or set %s, or a context: lockstep context set), or --insecure for a node started with --insecure", certsDirEnv)
	}
	cfg, err := client.LoadTLS(dir, c.String("user"))
	return cfg, false, err
}

// dialClient connects the Go client to the cluster at --addr and opens its session, within
// ctx.
func dialClient(ctx context.Context, c *cli.Context) (*client.Client, error) {
	cfg, err := clientConfig(c)
	if err != nil {
		return nil, err
	}
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		return nil, dialFailed(cfg.Addrs, c.Duration("timeout"), err)
	}
	return cl, nil
}

// dialFailed is the error of connecting to the cluster at addrs, bounded by timeout, that
// failed with err. "Cannot reach" only if the cluster could not be reached in that time:
// a node that answered and refused the client (a permission refusal, another cluster,
// another protocol, the TLS handshake) says so, for nothing would change with a longer
// wait.
func dialFailed(addrs []string, timeout time.Duration, err error) error {
	at := strings.Join(addrs, ",")
	switch {
	case errors.Is(err, client.ErrPermissionDenied):
		return fmt.Errorf("the cluster at %s refused this client's user: %w", at, err)
	case errors.Is(err, client.ErrClusterMismatch), errors.Is(err, client.ErrProtocolVersion), errors.Is(err, client.ErrTLS):
		return fmt.Errorf("a node at %s refused the connection: %w", at, err)
	case errors.Is(err, client.ErrBadConfig), errors.Is(err, context.Canceled):
		return err
	}
	return fmt.Errorf("%w at %s within %v: %w", errCannotReach, at, timeout, err)
}

// openClient returns a Go client for the cluster at --addr without contacting it: admin
// requests and stream reads need no leader and no session.
func openClient(c *cli.Context) (*client.Client, error) {
	cfg, err := clientConfig(c)
	if err != nil {
		return nil, err
	}
	cl, err := client.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", strings.Join(c.StringSlice("addr"), ","), err)
	}
	return cl, nil
}

// adminCommand prepares one admin command: its context (c's, ended after --timeout) and a
// Go client from openClient. done closes the client and ends the context.
func adminCommand(c *cli.Context) (ctx context.Context, cl *client.Client, done func(), err error) {
	ctx, cancel, err := commandContext(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if cl, err = openClient(c); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cl, func() { cl.Close(); cancel() }, nil
}

// adminDo runs one admin call that answers nothing, with a client from adminCommand, and
// reports it done (printDone) with v, format and args.
func adminDo(c *cli.Context, call func(context.Context, *client.Client) error, v any, format string, args ...any) error {
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	if err := call(ctx, cl); err != nil {
		return err
	}
	return printDone(c, v, format, args...)
}

// adminShow runs one admin call with a client from adminCommand and prints its result
// with show in the --output format; what, if not empty, names the call in its error.
func adminShow[T any](c *cli.Context, what string, call func(context.Context, *client.Client) (T, error),
	show func(io.Writer, string, T) error) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return err
	}
	defer done()
	v, err := call(ctx, cl)
	if err != nil && what != "" {
		return fmt.Errorf("%s: %w", what, err)
	} else if err != nil {
		return err
	}
	return show(c.App.Writer, format, v)
}
