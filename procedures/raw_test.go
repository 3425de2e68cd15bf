package procedures_test

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
)

// TestRegisterRaw: a raw procedure gets its argument bytes as sent and returns its
// result's bytes, rewritten canonically; a read-only one that writes fails with
// ErrReadOnly, a result that is not msgpack with ErrResultEncoding, and its catalogue
// entry says any value for both.
func TestRegisterRaw(t *testing.T) {
	reg := procedures.New()
	procedures.MustRegister(reg, "typed", func(*partition.Tx, int) (int, error) { return 0, nil })
	fp := reg.Fingerprint()
	echo := func(tx *partition.Tx, args []byte) ([]byte, error) { return args, nil }
	if err := procedures.RegisterRaw(reg, "raw.echo", echo, procedures.Doc("echo")); err != nil {
		t.Fatal(err)
	}
	writes := func(tx *partition.Tx, args []byte) ([]byte, error) { return nil, tx.Put("t", []byte("k"), args) }
	if err := procedures.RegisterRaw(reg, "raw.ro", writes, procedures.ReadOnly()); err != nil {
		t.Fatal(err)
	}
	if err := procedures.RegisterRaw(reg, "raw.echo", echo); !errors.Is(err, procedures.ErrDuplicate) {
		t.Errorf("duplicate: got %v, want ErrDuplicate", err)
	}
	if err := procedures.RegisterRaw(reg, "", echo); !errors.Is(err, procedures.ErrBadName) {
		t.Errorf("empty name: got %v, want ErrBadName", err)
	}
	if reg.Fingerprint() == fp {
		t.Error("fingerprint unchanged by raw registrations")
	}
	for _, p := range reg.Catalog() {
		if p.Name == "raw.echo" && (p.Args.Kind != schema.KindAny || p.Result.Kind != schema.KindAny || p.Doc != "echo") {
			t.Errorf("catalogue entry %+v", p)
		}
	}
	eng, err := partition.NewEngine(partition.Config{Partitions: 1}, reg.NewHandler)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	in := func(proc string, args []byte) partition.Input {
		return partition.Input{Procedure: proc, Key: []byte("k"), Args: args, Seq: 1}
	}
	for i, tt := range []struct {
		in   partition.Input
		want string
		err  error
	}{
		{in("raw.echo", []byte{0x82, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02}), "\x82\xa1a\x02\xa1b\x01", nil}, // map keys sorted
		{in("raw.echo", nil), "\xc0", nil}, // no result bytes: nil
		{in("raw.echo", []byte{0x92}), "", procedures.ErrResultEncoding},
		{in("raw.ro", []byte{0x01}), "", procedures.ErrReadOnly},
	} {
		r := eng.Execute([]partition.Input{tt.in})[0]
		if !errors.Is(r.Err, tt.err) || (tt.err == nil && string(r.Value) != tt.want) {
			t.Errorf("#%d: got %x %v, want %x %v", i, r.Value, r.Err, tt.want, tt.err)
		}
	}
	if _, ok := eng.Partitions()[0].Get("t", []byte("k")); ok {
		t.Error("the read-only procedure's write stayed")
	}
}
