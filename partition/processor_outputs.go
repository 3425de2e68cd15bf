package partition

import "fmt"

// Output streams a processor declares (Processor.Outputs). The runtime creates them, so a
// pipeline needs its input stream created and nothing else: at the start of every
// processor phase (RunProcessors, on every replica at the same log position), for each
// processor whose input stream exists, each declared output stream that does not exist is
// created with its declared configuration on every partition — repeatedly, so an output
// that is another processor's input brings that one's outputs too. A stream the user
// created first keeps the user's configuration; one deleted while the processor's input
// exists is created again, empty, at the next phase.

// OutputStream is a stream a processor writes and the runtime creates for it.
type OutputStream struct {
	// Name names the stream; it must be one of the processor's Emits.
	Name string
	// Config is the stream's retention and compaction when the runtime creates it.
	Config StreamConfig
}

// validateOutputs checks the declared outputs of a set of processors: valid names, each
// one emitted by its processor and not its input, valid configurations, and one
// configuration per stream whichever processors declare it.
func validateOutputs(ps []Processor) error {
	declared := map[string]*Processor{}
	for i := range ps {
		p := &ps[i]
		for _, o := range p.Outputs {
			emitted := false
			for _, s := range p.Emits {
				emitted = emitted || s == o.Name
			}
			switch other := declared[o.Name]; {
			case checkName(o.Name) != nil || o.Name == p.Input:
				return fmt.Errorf("%w: %s: output stream %q", ErrBadProcessor, p.Name, o.Name)
			case !emitted:
				return fmt.Errorf("%w: %s: output stream %s is not one it emits", ErrBadProcessor, p.Name, o.Name)
			case o.Config.Validate() != nil:
				return fmt.Errorf("%w: %s: output stream %s: %w", ErrBadProcessor, p.Name, o.Name, o.Config.Validate())
			case other != nil && outputConfig(other, o.Name) != o.Config:
				return fmt.Errorf("%w: %s: output stream %s declared by %s with another configuration (%+v, not %+v)",
					ErrBadProcessor, p.Name, o.Name, other.Name, outputConfig(other, o.Name), o.Config)
			}
			declared[o.Name] = p
		}
	}
	return nil
}

func outputConfig(p *Processor, name string) StreamConfig {
	for _, o := range p.Outputs {
		if o.Name == name {
			return o.Config
		}
	}
	return StreamConfig{}
}

// ensureOutputStreams creates the missing declared output streams of the processors whose
// input exists, on every partition at once, until there are none left to create; call it
// at the start of a phase, from the goroutine that calls Execute.
func (e *Engine) ensureOutputStreams() {
	for created := true; created; {
		created = false
		for i := range e.procs {
			d := &e.procs[i]
			if len(d.Outputs) == 0 || !e.streamAnywhere(d.Input) {
				continue
			}
			for _, o := range d.Outputs {
				for _, p := range e.parts {
					if p.streams[o.Name] == nil {
						p.mu.Lock()
						p.streams[o.Name] = newStream(o.Name, o.Config)
						p.mu.Unlock()
						created = true
					}
				}
			}
		}
	}
}

// streamAnywhere reports whether stream name exists on some partition.
func (e *Engine) streamAnywhere(name string) bool {
	for _, p := range e.parts {
		if p.streams[name] != nil {
			return true
		}
	}
	return false
}
