package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

// Command is the `node` command of a binary named program ("lockstep" for the lockstep
// binary; it names the binary in the help's examples): the flags of Flags, and an action
// that builds the config with ConfigFromFlags and runs the node with Run and reg.
func Command(program string, reg Registry) *cli.Command {
	return &cli.Command{
		Name:  "node",
		Usage: "run one Lockstep node",
		Description: `Runs a node until SIGINT or SIGTERM, then shuts it down cleanly. To create a cluster,
start every initial node with the same --bootstrap list; later restarts need no
--bootstrap (the data dir remembers). A new node enters a running cluster with --join
(the client addresses of some members), or is admitted by "lockstep cluster join".
Every flag can also come from --config FILE (YAML or TOML, keys named like the flags);
flags given on the command line win. See docs/operations.md.

Every port speaks mutual TLS with the certificates of --certs-dir (ca.crt, node.crt,
node.key; make them with "lockstep cert"); SIGHUP reloads them. Without --certs-dir the
node refuses to start unless --insecure is given (development only; see docs/security.md).

Each of --raft, --client and --admin is the address to listen on and to advertise; to
bind one address and tell others another (a container binding 0.0.0.0, reached by a DNS
name) give --raft-listen and --raft-advertise instead, and the same for client and
admin. --probe-addr serves /healthz and /readyz on plain HTTP for Kubernetes probes.
--check-config checks the flags and the config file and exits.

Example, three nodes on one machine:
  ` + program + ` node --certs-dir certs --id n1 --data /tmp/ls1 --raft 127.0.0.1:7001 --client 127.0.0.1:8001 --admin 127.0.0.1:9001 \
    --bootstrap n1=127.0.0.1:7001=127.0.0.1:8001,n2=127.0.0.1:7002=127.0.0.1:8002,n3=127.0.0.1:7003=127.0.0.1:8003
  (and the same for n2 and n3 with their own --id, --data, --raft, --client and --admin)

Example, a fourth node joining the running cluster, configured by a file:
  ` + program + ` node --config n4.yaml --join 127.0.0.1:8001,127.0.0.1:8002`,
		// --check-config is the command's alone, not a key of the config file.
		Flags: append(Flags(), &cli.BoolFlag{Name: "check-config",
			Usage: "check the flags and the --config file, print the addresses the node would listen on and advertise, and exit without starting it"}),
		Action: func(c *cli.Context) error {
			cfg, err := ConfigFromFlags(c)
			if err != nil {
				return err
			}
			if c.Bool("check-config") {
				printChecked(c.App.Writer, cfg)
				return nil
			}
			return Run(c.Context, cfg, reg)
		},
	}
}

// App is the command-line program of a custom node binary: the `node` command of Command
// with reg's procedures, and --version (node.Version). Its name is the binary's.
func App(reg Registry) *cli.App {
	name := filepath.Base(os.Args[0])
	return &cli.App{
		Name:    name,
		Usage:   "a Lockstep node with its own procedures",
		Version: node.Version(), // nodes report the same in their status
		Commands: []*cli.Command{
			Command(name, reg),
		},
	}
}

// Main is the whole main function of a custom node binary: it runs App(reg) on the
// process's arguments (`BINARY node --id n1 ...`, as `lockstep node` takes them) and
// exits 1 with a one-line error on stderr if it fails.
func Main(reg Registry) {
	app := App(reg)
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, app.Name+":", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
		os.Exit(1)
	}
}
