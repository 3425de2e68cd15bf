package partition

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Tests of table changelogs (Config.Changelogs, Tx.Put, Tx.Delete): docs/streams.md,
// "Changelogs".

// changelogProcs write table "t", which publishes to "t.log". Args are comma-separated
// operations "k=v" (put) and "-k" (delete), each on the partition of the input.
var changelogProcs = procs{
	// create defines "t.log" on every partition in scope, key-compacted if Args is "compact".
	"create": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		for _, p := range tx.Scope() {
			v, _ := tx.On(p)
			if err := v.CreateStream("t.log", StreamConfig{Compact: string(in.Args) == "compact"}); err != nil {
				return out, err
			}
		}
		return out, nil
	},
	"write": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		return out, changelogOps(tx, string(in.Args))
	},
	// write-fail writes, then fails: nothing may remain.
	"write-fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		if err := changelogOps(tx, string(in.Args)); err != nil {
			return out, err
		}
		return out, errHandler
	},
	// write-ignore writes and ignores the errors: a refused write must have changed nothing.
	"write-ignore": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		for _, op := range strings.Split(string(in.Args), ",") {
			_ = changelogOps(tx, op)
		}
		return out, nil
	},
}

func changelogOps(tx *Tx, ops string) error {
	for _, op := range strings.Split(ops, ",") {
		var err error
		if k, ok := strings.CutPrefix(op, "-"); ok {
			err = tx.Delete("t", []byte(k))
		} else {
			k, v, _ := strings.Cut(op, "=")
			err = tx.Put("t", []byte(k), []byte(v))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func changelogCfg(parts int) Config {
	return Config{Partitions: parts, Changelogs: map[string]string{"t": "t.log"}}
}

func writeInput(proc, ops string, ms int64) Input {
	return Input{Procedure: proc, Partition: 0, Args: []byte(ops), Time: ms * 1e6}
}

// changelog renders stream of partition p as "key=change@ms" records, decoded.
func changelog(t *testing.T, p *Partition, stream string) string {
	t.Helper()
	var out []string
	for _, r := range readStreamAll(t, p, stream) {
		v, deleted, err := DecodeChange(r.Value)
		if err != nil {
			t.Fatalf("record %d of %s: %v", r.Offset, stream, err)
		}
		s := fmt.Sprintf("%d:%s=%s@%d", r.Offset, r.Key, v, r.EventTime)
		if deleted {
			s = fmt.Sprintf("%d:%s deleted@%d", r.Offset, r.Key, r.EventTime)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestChangelogPutDelete(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%t", compact), func(t *testing.T) {
			e := newEngine(t, changelogCfg(2), changelogProcs)
			// No stream yet: the write fails, typed, and nothing changed, even when the
			// procedure ignores the error.
			if err := runErr(e, writeInput("write", "a=0", 1)); !errors.Is(err, ErrUnknownStream) {
				t.Fatalf("write before the changelog exists: %v, want ErrUnknownStream", err)
			}
			mustExecute(t, e, writeInput("write-ignore", "a=0,-a", 1))
			if got := rows(e.Partitions()[0], "t"); got != nil {
				t.Fatalf("rows after refused writes: %v", got)
			}
			args := ""
			if compact {
				args = "compact"
			}
			mustExecute(t, e, Input{Procedure: "create", Scope: AllPartitions(2), Args: []byte(args), Time: 1e6})
			mustExecute(t, e,
				writeInput("write", "a=1,b=2", 10),
				writeInput("write", "a=3,-a,-nothing", 20), // deleting an absent row is no change
				writeInput("write", "e=", 30),              // an empty value is a value, not a delete
			)
			// A failed input leaves neither its rows nor its changelog records.
			if err := runErr(e, writeInput("write-fail", "b=9,-e,c=9", 40)); !errors.Is(err, errHandler) {
				t.Fatalf("write-fail: %v", err)
			}
			p := e.Partitions()[0]
			if got, want := strings.Join(rows(p, "t"), " "), "b=2 e="; got != want {
				t.Fatalf("rows %q, want %q", got, want)
			}
			want := "0:a=1@10 1:b=2@10 2:a=3@20 3:a deleted@20 4:e=@30"
			if compact {
				want = "1:b=2@10 3:a deleted@20 4:e=@30" // the latest change per key
			}
			if got := changelog(t, p, "t.log"); got != want {
				t.Fatalf("changelog\n got %s\nwant %s", got, want)
			}
			if info, _ := p.StreamInfo("t.log"); info.NextOffset != 5 {
				t.Fatalf("next offset %d, want 5: the failed input's records were not undone", info.NextOffset)
			}
			// The changelog is the writing partition's own: partition 1 has none.
			if got := changelog(t, e.Partitions()[1], "t.log"); got != "" {
				t.Fatalf("partition 1's changelog: %s", got)
			}
			checkHashes(t, e)
		})
	}
}

func TestChangelogDecode(t *testing.T) {
	for _, v := range [][]byte{nil, {}, {'x'}, {ChangeDelete, 'x'}} {
		if _, _, err := DecodeChange(v); !errors.Is(err, ErrBadChange) {
			t.Errorf("DecodeChange(%q): %v, want ErrBadChange", v, err)
		}
	}
}

func TestChangelogConfig(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	for _, c := range []map[string]string{
		{"": "s"}, {long: "s"}, {"t": ""}, {"t": long},
		{"sys.processors": "s"},
		{"rep": "s"},
		{"a": "s", "b": "s"},
	} {
		cfg := Config{Changelogs: c, ReplicatedTables: []string{"rep"}}
		if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Changelogs %v: %v, want ErrBadConfig", c, err)
		}
	}
	if err := (Config{Changelogs: map[string]string{"a": "s", "b": "u"}}).Validate(); err != nil {
		t.Errorf("valid changelogs: %v", err)
	}
	// The longest row value still fits a changelog record only without the marker byte.
	e := newEngine(t, changelogCfg(1), procs{
		"create": changelogProcs["create"],
		"big": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.Put("t", []byte("k"), make([]byte, MaxValueBytes))
		},
	})
	mustExecute(t, e, Input{Procedure: "create", Scope: AllPartitions(1)})
	if err := runErr(e, Input{Procedure: "big"}); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("put of MaxValueBytes to a publishing table: %v, want ErrValueTooLarge", err)
	}
}

// TestChangelogProcessor materialises "t" elsewhere from its changelog: a processor that
// did not declare "copy.log" writes table "copy", which publishes to it, and sees every
// change exactly once, across budget carry-over.
func TestChangelogProcessor(t *testing.T) {
	const parts = 2
	mirror := Processor{Name: "mirror", Input: "t.log", Process: func(tx *Tx, rec Record) error {
		v, deleted, err := DecodeChange(rec.Value)
		if err != nil {
			return err
		}
		if err := bump(tx, "seen", fmt.Appendf(nil, "%020d", rec.Offset)); err != nil {
			return err
		}
		if deleted {
			return tx.Delete("copy", rec.Key)
		}
		return tx.Put("copy", rec.Key, v)
	}}
	// feedback writes "t" while consuming "t.log": it would feed itself, so it fails.
	feedback := Processor{Name: "feedback", Input: "t.log", Process: func(tx *Tx, rec Record) error {
		return tx.Put("t", rec.Key, nil)
	}}
	cfg := Config{Partitions: parts, Changelogs: map[string]string{"t": "t.log", "copy": "copy.log"},
		Processors: []Processor{mirror, feedback}}
	ps := procs{
		"create": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, _ := tx.On(p)
				for _, s := range []string{"t.log", "copy.log"} {
					if err := v.CreateStream(s, StreamConfig{}); err != nil {
						return out, err
					}
				}
			}
			return out, nil
		},
		"write": changelogProcs["write"],
	}
	e := newEngine(t, cfg, ps)
	mustExecute(t, e, Input{Procedure: "create", Scope: AllPartitions(parts), Time: testTime})
	var ops []string
	for i := 0; i < 40; i++ {
		k := keyOn(i%parts, parts, i%7)
		if i%5 == 4 {
			ops = append(ops, "-"+k)
		} else {
			ops = append(ops, fmt.Sprintf("%s=v%d", k, i))
		}
	}
	for i, op := range ops {
		k := strings.TrimPrefix(strings.SplitN(op, "=", 2)[0], "-")
		mustExecute(t, e, Input{Procedure: "write", Key: []byte(k), Partition: PartitionOf([]byte(k), parts), Args: []byte(op), Time: testTime + int64(i)})
		e.RunProcessors(ProcessorPhase{Time: testTime, Seq: uint64(i), Budget: 2})
	}
	for i := 0; e.ProcessorsPending(); i++ {
		if i == 100 {
			t.Fatal("processors still pending after 100 phases: a processor feeds itself")
		}
		e.RunProcessors(ProcessorPhase{Time: testTime, Seq: uint64(100 + i), Budget: 2})
	}
	for _, p := range e.Partitions() {
		if got, want := rows(p, "copy"), rows(p, "t"); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("partition %d: copy %v, t %v", p.ID(), got, want)
		}
		info, _ := p.StreamInfo("t.log")
		for off := uint64(0); off < info.NextOffset; off++ {
			if n := counter(p, "seen", fmt.Sprintf("%020d", off)); n != 1 {
				t.Errorf("partition %d: change %d seen %d times", p.ID(), off, n)
			}
		}
		if got, want := len(readStreamAll(t, p, "copy.log")), int(info.NextOffset); got != want {
			t.Errorf("partition %d: copy.log has %d records, want %d (one per change of t)", p.ID(), got, want)
		}
		dead := readStreamAll(t, p, "t.log"+DeadLetterSuffix)
		if len(dead) != int(info.NextOffset) {
			t.Errorf("partition %d: %d dead letters of feedback, want %d", p.ID(), len(dead), info.NextOffset)
		}
		for _, r := range dead {
			var dl DeadLetter
			if err := msgpack.Unmarshal(r.Value, &dl); err != nil || dl.Processor != "feedback" || !strings.Contains(dl.Error, "publishes to its input") {
				t.Errorf("dead letter %+v, %v: want feedback's refused write", dl, err)
			}
		}
		for _, st := range e.ProcessorStatus() {
			if st.Processor == "mirror" && st.DeadLetters != 0 {
				t.Errorf("mirror failed: %+v", st)
			}
		}
	}
	checkHashes(t, e)
}
