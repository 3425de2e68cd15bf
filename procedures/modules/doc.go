/*
Package modules runs application code written in Starlark (go.starlark.net) as Lockstep
procedures and processors: code that can be deployed as data (DESIGN.md section 10)
instead of compiled into the binary, and that runs under deterministic budgets, so that
a module that loops or allocates without end fails one invocation or one record — the
same way on every replica — instead of stopping a partition.

A module is one Starlark file that defines functions and declares which of them are
procedures and processors:

	def add(tx, args):
	    n = tx.get("counts", tx.key(), 0) + args["delta"]
	    tx.put("counts", tx.key(), n)
	    return n

	def get(tx, args):
	    return tx.get("counts", tx.key(), 0)

	def count(tx, rec):
	    page = rec.value["page"]
	    tx.put("pages", page, tx.get("pages", page, 0) + 1)

	def per_page(state, rec):
	    return state + 1

	def window_result(tx, r):
	    tx.emit("page_counts", r.key, {"start": r.start, "n": r.value}, r.end - 1)

	def tick(tx):
	    tx.put("heartbeat", str(tx.partition()), tx.now())

	procedures = {"app.add": add, "app.get": procedure(get, read_only = True)}
	processors = {
	    "app.count": processor(count, input = "clicks", emits = ["counts"], tick = tick),
	    "app.per10s": processor(per_page, input = "clicks", init = 0, result = window_result,
	        window = tumbling("10s", out_of_order = "2s", lateness = "30s"),
	        outputs = ["page_counts"]),
	}

The second processor is a window aggregate (window.go): procedures/window's operator, the
one Go processors use, folding records with per_page and handing each result to
window_result; tick hooks, outputs the runtime creates and windows are Dialect2 (cluster
version 4, Options.Dialect), ext.go.

# Usage

A running cluster deploys modules through the log (lockstep deploy app.star): every
replica compiles the source with Compiler, the "starlark" kind of replica.Compiler, at the
deploy's log index. A program can also compile one into its binary:

	m, err := modules.Compile("app.star", source, modules.Options{Existing: builtinNames})
	...
	reg := procedures.Builtins()
	err = m.Register(reg) // procedures.RegisterRaw and RegisterProcessor

Compile does, in order:

 1. parse the source (while loops and sets allowed; no recursion, no load, no top-level
    control flow), failing with ErrCompile and file:line:col;
 2. rewrite the syntax tree so that operators, method calls, slices and *args go through
    charged built-ins (rewrite.go) — the step budget then bounds the work and memory of
    every operation, not only the number of instructions;
 3. resolve names against the universe, the charged built-ins and procedure/processor:
    an undefined name is ErrCompile;
 4. run the top-level code under the step budget and freeze the globals, so no call can
    change state that another call sees;
 5. read the procedures and processors dicts (ErrDeclaration for a bad shape, a bad
    name or a function with the wrong parameters; ErrRedefined for a name in
    Options.Existing or declared twice).

Each call then runs in a new thread with the module's budgets: the function gets a tx
(the partition.Tx: get, put, delete, scan, emit, append, now, rand, key, partition,
partitions, partition_of, on) and its arguments (the decoded msgpack value) or its record
(key, value, raw, offset, time). A procedure's return value is its msgpack result. A tick
hook gets a tx; a window aggregate's fold gets (state, rec), its result function (tx, r)
and its late function (tx, rec, watermark), all within the record's (or tick's) budget.

# The contract

  - Determinism: the result of a call depends only on the module, its Options, the
    interpreter version and what the tx returns. The module has no clock, randomness,
    I/O, load or ambient state except through tx (print discards its output); Starlark
    dicts iterate in insertion order; values are encoded canonically (values.go).
  - Budgets (Options): MaxSteps interpreter steps plus charged work, MaxElements per
    container, MaxValueBytes per string and per encoded value, MaxIntBits per int, 64
    levels of nesting. A cluster takes the first four from its replicated configuration
    (from cluster version 4; replica/modulesettings.go). Past one, the call fails with a LimitError (ErrLimitExceeded)
    whose text names the limit, the same on every replica; the engine undoes the call's
    effects, and a processor's record goes to its dead-letter stream.
  - Errors the code raises are ErrRaised with file:line:col, the function and the
    message; no addresses or other per-process text.
  - Work is charged where it happens, including comparisons, membership and hashing a
    key, which walk their values through shared references (x = [x, x] doubles what a
    comparison of x walks). Not charged: hashing a string that is a literal index
    (d["page"]), bounded by the source.
  - A Module is immutable and safe for concurrent use by every partition's goroutine.
*/
package modules
