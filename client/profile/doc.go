/*
Package profile holds the connection settings of Lockstep's command-line tools: named
contexts in a file (kubectl's contexts, etcdctl's and nats' environment variables), and
the rule that merges them with flags and the environment.

# Duties

 1. Read and write the contexts file (DefaultPath: $LOCKSTEP_CONFIG, else
    $XDG_CONFIG_HOME/lockstep/contexts.yaml, else ~/.config/lockstep/contexts.yaml): YAML,
    a current context and named Settings. Save writes it whole, atomically, mode 0600.
 2. Name the environment variables (EnvAddr: LOCKSTEP_ADDR, and the others) that give
    the flags' values when a flag is not given.
 3. Merge layers of settings, highest precedence first (Resolve): each field from the
    first layer that sets it; the security choice (certificates or plaintext) as one field,
    so that a layer's --insecure is not mixed with a lower layer's certificates directory.

# Usage

	f, err := profile.Load(path)
	ctx, _, err := f.Selected(name) // name "": the current context
	s, err := profile.Resolve(flagsAndEnv, ctx, profile.Defaults())

# Contract

A zero field of Settings means "not set by this layer": a layer cannot set an empty value
over a lower one. Every error is one of the sentinels of errors.go, wrapped with what was
wrong; nothing is written when an error is returned.
*/
package profile
