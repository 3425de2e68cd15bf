package main

import (
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

func groupCommand() *cli.Command {
	return &cli.Command{
		Name:  "group",
		Usage: "list and describe consumer groups",
		Description: `Consumer groups are sets of members that share the partitions of one stream,
coordinated through the log: join, heartbeat, leave and offset commits are log inputs
on the group's home partition. Stream partition p belongs to the p mod n-th member in
id order; the generation grows with every change of members (a join, a leave, a member
whose session timed out by batch time), and a commit naming an older generation is
refused. Programs join with the Go client (client.JoinGroup); see docs/streams.md.`,
		Subcommands: []*cli.Command{groupListCommand(), groupDescribeCommand()},
	}
}

// groupListCommand is `lockstep group list`.
func groupListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the consumer groups: stream, generation, member count",
		Flags: withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error {
			return withSession(c, func(cl *client.Client) (any, error) { return cl.Groups().List(c.Context) })
		},
	}
}

// groupDescribeCommand is `lockstep group describe`.
func groupDescribeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a consumer group's stream, generation, members, assignment and committed offsets",
		ArgsUsage: "GROUP",
		Description: `Prints group GROUP as its home partition holds it: the stream it consumes, its
generation, each member (id, session timeout, last heartbeat by batch time, partitions
assigned in this generation) and the committed offset of each partition (the next
offset to consume, and the generation it was committed in). Describing removes no one:
a member past its session timeout is listed until the next group call removes it.
An unknown group is an error (exit status 7, not-found).

Examples:
  lockstep group describe workers
  lockstep group describe workers --output json`,
		Flags: withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("group describe needs exactly one GROUP")
			}
			group := c.Args().First()
			return withSession(c, func(cl *client.Client) (any, error) { return cl.Groups().Describe(c.Context, group) })
		},
	}
}
