/*
Package invoke calls any procedure by its description (client.Procedure), as `lockstep
invoke` does: the arguments are JSON encoded by the procedure's argument schema, the
result is decoded by its result schema, for a built-in of this binary and for a custom
procedure of the cluster's catalogue alike.

# Duties

 1. Describe this binary's built-ins as a node's catalogue would (Builtins, Builtin).
 2. Find a procedure this binary does not have in the cluster's catalogue (Lookup), or
    fail with ErrUnknownProcedure.
 3. Encode JSON arguments by the argument schema (EncodeArgs): empty text is no arguments.
 4. Run a call (Call.Run): a write in the client's session, exactly once; a read at the
    call's consistency; single- or multi-partition by the description; the result
    decoded by the result schema.

# Usage

	p, ok := invoke.Builtin(name)
	args, err := invoke.EncodeArgs(&p.Args, `{"Delta": 1}`)
	v, err := (&invoke.Call{Proc: p, Key: []byte("visits"), Args: args}).Run(ctx, cl)

# Contract

Argument errors name the --args flag, as the command line reports them; nothing is sent
before the arguments encoded.
*/
package invoke
