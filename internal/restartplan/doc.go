/*
Package restartplan is the rolling restart (or upgrade) of `lockstep cluster
restart-plan`: one node at a time, so that the cluster keeps serving.

# Duties

 1. Order the nodes (Plan): read replicas and learners, then followers, each by id, then
    the leader; count the voters.
 2. Print the plan (PrintPlan) or its JSON form (PlanJSON), with the steps after the roll
    of an upgrade (Upgrade: cluster version, activations).
 3. Carry it out (Execute), refusing a cluster that is not healthy or has fewer than
    MinVoters voters, then, for each node:
    a. if it leads, hand leadership to another voter and wait for a healthy cluster;
    b. run the restart command (CommandFor; /bin/sh, its own process group, a timeout);
    c. wait until the node answers from a new process, caught up with the leader, a voter
    again (read replicas and learners are not asked to be), and the cluster is healthy
    (clusterstatus.Report.Health).
 4. After the roll, perform the upgrade's steps: cluster upgrade, then activate.

# Usage

	r := restartplan.New(restartplan.Config{Client: cl, Out: os.Stdout, ErrOut: os.Stderr, Command: cmd, ...})
	cs, err := r.Status(ctx)
	plan, voters := restartplan.Plan(cs)
	r.PrintPlan(plan)
	took, err := r.Execute(ctx, cs, plan, voters)

# Contract

Execute stops at the first step that fails, with an error wrapping ErrStopped that names
the node, the step and the last state seen: the nodes before it were restarted, the rest
were not. A refusal (ErrRefused) changes nothing. A failed step after the roll wraps
ErrUpgradeStopped: every node runs the new binary by then.
*/
package restartplan
