package procedures

import (
	"bytes"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/canon"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// instance is one goroutine's copy of a procedure, holding reusable argument and result
// values so that decoding and encoding allocate nothing of their own.
type instance interface {
	run(tx *partition.Tx, raw []byte, args *bytes.Reader, dec *msgpack.Decoder, w *appendWriter, enc *msgpack.Encoder) error
}

// runner is a partition.Handler for one goroutine.
type runner struct {
	reg   *Registry
	insts []instance // by entry id, created on first use
	rd    bytes.Reader
	dec   *msgpack.Decoder
	w     appendWriter
	enc   *msgpack.Encoder
	canon []byte // scratch for canonical results
}

func newRunner(r *Registry) *runner {
	return &runner{reg: r, insts: make([]instance, len(r.byID)), dec: msgpack.NewDecoder(nil), enc: msgpack.NewEncoder(nil)}
}

// Run implements partition.Handler.
func (r *runner) Run(tx *partition.Tx, in *partition.Input, out []byte) ([]byte, error) {
	e, ok := r.reg.procs[in.Procedure]
	if !ok {
		return out, fmt.Errorf("%w: %q", ErrUnknownProcedure, in.Procedure)
	}
	if e.info.Multi != in.Multi() {
		return out, fmt.Errorf("%w: %s (multi-partition: %t)", ErrWrongScope, e.info.Name, e.info.Multi)
	}
	inst := r.insts[e.id]
	if inst == nil {
		inst = e.newInst()
		r.insts[e.id] = inst
	}
	r.rd.Reset(in.Args)
	r.dec.Reset(&r.rd)
	r.dec.DisallowUnknownFields(true)
	r.w.b = out
	r.enc.Reset(&r.w)
	r.enc.SetSortMapKeys(true)
	start := len(out)
	err := inst.run(tx, in.Args, &r.rd, r.dec, &r.w, r.enc)
	out, r.w.b = r.w.b, nil
	if err == nil && e.canon {
		// Results are cached in the replicated session table and hashed: a map's entries
		// must come out in one order on every replica (SetSortMapKeys covers few types).
		var c []byte
		if c, err = canon.Msgpack(r.canon[:0], out[start:]); err != nil {
			return out[:start], fmt.Errorf("%w: %s: %v", ErrResultEncoding, e.info.Name, err)
		}
		r.canon = c
		out = append(out[:start], c...)
	}
	return out, err
}

// appendWriter is an io.Writer and io.ByteWriter that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func (w *appendWriter) WriteByte(c byte) error { w.b = append(w.b, c); return nil }

// typed is the instance of a procedure registered with argument type A and result type R.
type typed[A, R any] struct {
	name     string
	fn       func(*partition.Tx, A) (R, error)
	readOnly bool
	fast     fastCodec[A, R] // nil: reflection only
	args     A
	result   R
}

// run decodes the arguments raw (also readable from rd through dec), runs the procedure
// and encodes its result with enc, which writes to w.
func (t *typed[A, R]) run(tx *partition.Tx, raw []byte, rd *bytes.Reader, dec *msgpack.Decoder, w *appendWriter, enc *msgpack.Encoder) error {
	var zeroA A
	var zeroR R
	t.args = zeroA
	if t.fast != nil {
		defer t.fast.release()
	}
	// No argument bytes at all mean the zero value of A.
	if len(raw) > 0 && (t.fast == nil || !t.fast.decode(raw, &t.args)) {
		t.args = zeroA
		// Before the decoder sees them: it allocates whatever a length header claims. A
		// fast codec bounds-checks what it accepts itself.
		if err := schema.CheckMsgpack(raw); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadArguments, t.name, err)
		}
		if err := dec.Decode(&t.args); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadArguments, t.name, err)
		}
		if rd.Len() > 0 {
			return fmt.Errorf("%w: %s: trailing bytes after arguments", ErrBadArguments, t.name)
		}
	}
	res, err := t.fn(tx, t.args)
	t.args = zeroA // drop references into the input
	if err != nil {
		return &ProcedureError{Procedure: t.name, Err: err}
	}
	if t.readOnly && tx.Changes() > 0 {
		return fmt.Errorf("%w: %s", ErrReadOnly, t.name)
	}
	if t.fast != nil {
		w.b = t.fast.appendResult(w.b, res)
		return nil
	}
	t.result = res
	err = enc.Encode(&t.result)
	t.result = zeroR
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrResultEncoding, t.name, err)
	}
	return nil
}
