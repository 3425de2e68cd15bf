package jepsen

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lockstepdb/lockstep/client"
)

// The cluster's certificates: a throw-away CA, the node certificate every node presents,
// and client root's certificate, which the harness's clients use.

// makeCerts makes the cluster's certificates in parent/certs with the binary's own `cert`
// commands: every port of the nodes speaks mutual TLS, as in production.
func makeCerts(ctx context.Context, bin, parent string) (string, *tls.Config, error) {
	dir := filepath.Join(parent, "certs")
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, err
	}
	for _, args := range [][]string{
		{"cert", "create-ca", "--certs-dir", dir},
		{"cert", "create-node", "--certs-dir", dir, "127.0.0.1", "localhost"},
		{"cert", "create-client", "--certs-dir", dir, "root"},
	} {
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("jepsen: lockstep %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	tlsCfg, err := client.LoadTLS(dir, "root")
	return dir, tlsCfg, err
}
