package main

import "github.com/urfave/cli/v2"

func demoCommand() *cli.Command {
	return &cli.Command{Name: "demo", Usage: "run an embedded 3-node cluster with the Voter workload", Action: runDemo}
}
