package procedures

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
)

// Raw is the declared argument and result type of a procedure registered with
// RegisterRaw: any msgpack value (schema KindAny in the catalogue).
type Raw any

// RegisterRaw adds a procedure named name whose arguments and result are msgpack bytes
// it handles itself, such as a module's (procedures/modules). fn gets the input's
// argument bytes as sent (empty for none) and returns its result's encoding, which the
// handler checks is one msgpack value and rewrites with sorted map entries, like a typed
// procedure's. Its catalogue entry and fingerprint declare Raw for both. Refusals and
// options are Register's.
func RegisterRaw(r *Registry, name string, fn func(tx *partition.Tx, args []byte) ([]byte, error), opts ...Option) error {
	if len(name) == 0 || len(name) > MaxNameBytes {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	base, version, err := ParseVersioned(name)
	if err != nil {
		return err
	}
	name = VersionKey(base, version)
	if _, ok := r.procs[name]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, name)
	}
	info := Info{Name: base, Version: version, Args: reflect.TypeFor[Raw](), Result: reflect.TypeFor[Raw]()}
	for _, o := range opts {
		o(&info)
	}
	inst := &rawInst{name: name, fn: fn, readOnly: info.ReadOnly}
	// base and version as register's: a raw procedure is a registration like any other
	// (it had neither, and a binary carrying a module's procedures listed them as "@0").
	e := &entry{info: info, base: base, version: version, id: len(r.byID), canon: true, newInst: func() instance { return inst }}
	r.procs[name] = e
	r.byID = append(r.byID, e)
	return nil
}

// rawInst is the instance of a raw procedure; it keeps no state, so instances are shared.
type rawInst struct {
	name     string
	fn       func(*partition.Tx, []byte) ([]byte, error)
	readOnly bool
}

func (ri *rawInst) run(tx *partition.Tx, raw []byte, _ *bytes.Reader, _ *msgpack.Decoder, w *appendWriter, _ *msgpack.Encoder) error {
	res, err := ri.fn(tx, raw)
	if err != nil {
		return &ProcedureError{Procedure: ri.name, Err: err}
	}
	if ri.readOnly && tx.Changes() > 0 {
		return fmt.Errorf("%w: %s", ErrReadOnly, ri.name)
	}
	if len(res) == 0 {
		res = []byte{0xc0} // nil
	}
	w.b = append(w.b, res...)
	return nil
}
