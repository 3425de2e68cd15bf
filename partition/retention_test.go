package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// streamProcs are test procedures over stream "s": "create" (Args: max records, max bytes,
// max age as uvarints, then a compact byte), "delete", "append" (Args: records
// "key=value" separated by ",", an optional "@ms" event time suffix per record) and
// "append-fail" (appends then fails).
func streamProcs() procs {
	return procs{
		"create": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			b := in.Args
			var v [3]int64
			for i := range v {
				n, k := binary.Varint(b)
				v[i], b = n, b[k:]
			}
			cfg := StreamConfig{MaxRecords: v[0], MaxBytes: v[1], MaxAgeMs: v[2], Compact: len(b) > 0 && b[0] == 1}
			for _, p := range tx.Scope() {
				view, _ := tx.On(p)
				if err := view.CreateStream("s", cfg); err != nil {
					return out, err
				}
			}
			return out, nil
		},
		"delete": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.DeleteStream("s")
		},
		"append": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, rec := range strings.Split(string(in.Args), ",") {
				var ms int64
				if i := strings.IndexByte(rec, '@'); i >= 0 {
					fmt.Sscan(rec[i+1:], &ms)
					rec = rec[:i]
				}
				k, v, _ := strings.Cut(rec, "=")
				off, err := tx.Append("s", []byte(k), []byte(v), ms)
				if err != nil {
					return out, err
				}
				out = fmt.Appendf(out, "%d ", off)
			}
			return out, nil
		},
		"append-fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if _, err := tx.Append("s", []byte("x"), []byte("never"), 0); err != nil {
				return out, err
			}
			return out, errHandler
		},
	}
}

func createArgs(maxRecords, maxBytes, maxAgeMs int64, compact bool) []byte {
	b := binary.AppendVarint(nil, maxRecords)
	b = binary.AppendVarint(b, maxBytes)
	b = binary.AppendVarint(b, maxAgeMs)
	if compact {
		b = append(b, 1)
	}
	return b
}

// ms is a batch time in nanoseconds for t milliseconds.
func ms(t int64) int64 { return t * 1e6 }

// readAll returns the live records of stream s on partition 0 as "off:key=value@time".
func readAll(t *testing.T, e *Engine) string {
	t.Helper()
	p := e.Partitions()[0]
	info, ok := p.StreamInfo("s")
	if !ok {
		return "none"
	}
	recs, next, err := p.ReadStream("s", info.FirstOffset, 1<<20)
	if err != nil || next != info.NextOffset {
		t.Fatalf("ReadStream from first %d: next %d, %v; want %d", info.FirstOffset, next, err, info.NextOffset)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%d,%d) n%d b%d:", info.FirstOffset, info.NextOffset, info.Records, info.Bytes)
	for _, r := range recs {
		fmt.Fprintf(&b, " %d:%s=%s@%d", r.Offset, r.Key, r.Value, r.EventTime)
	}
	return b.String()
}

func TestStreamRetentionAndCompaction(t *testing.T) {
	tests := []struct {
		cfg  []byte
		ins  []Input // after create, on partition 0
		want string
	}{
		// No bounds: everything kept; event time defaults to the batch time.
		{createArgs(0, 0, 0, false), []Input{{Procedure: "append", Args: []byte("a=1,b=2"), Time: ms(5)}},
			"[0,2) n2 b4: 0:a=1@5 1:b=2@5"},
		// Count: the front goes at the end of the input, offsets stay.
		{createArgs(2, 0, 0, false), []Input{{Procedure: "append", Args: []byte("a=1,b=2,c=3"), Time: ms(5)}},
			"[1,3) n2 b4: 1:b=2@5 2:c=3@5"},
		// Bytes (key + value): "c=333" alone is 4 bytes.
		{createArgs(0, 5, 0, false), []Input{{Procedure: "append", Args: []byte("a=1,b=2,c=333"), Time: ms(5)}},
			"[2,3) n1 b4: 2:c=333@5"},
		// A record longer than MaxBytes is trimmed at once; its offset was still assigned.
		{createArgs(0, 3, 0, false), []Input{{Procedure: "append", Args: []byte("a=1234"), Time: ms(5)}},
			"[1,1) n0 b0:"},
		// Age by event time against the appending input's batch time; only the front.
		{createArgs(0, 0, 100, false), []Input{
			{Procedure: "append", Args: []byte("a=1@10,b=2@200,c=3@20"), Time: ms(200)},
			{Procedure: "append", Args: []byte("d=4"), Time: ms(250)}},
			"[1,4) n3 b6: 1:b=2@200 2:c=3@20 3:d=4@250"},
		{createArgs(0, 0, 100, false), []Input{
			{Procedure: "append", Args: []byte("a=1@10,b=2@200,c=3@20"), Time: ms(200)},
			{Procedure: "append", Args: []byte("d=4"), Time: ms(301)}},
			"[3,4) n1 b2: 3:d=4@301"},
		// A failed input changes nothing, retention included.
		{createArgs(1, 0, 0, false), []Input{
			{Procedure: "append", Args: []byte("a=1"), Time: ms(5)},
			{Procedure: "append-fail", Time: ms(6)}},
			"[0,1) n1 b2: 0:a=1@5"},
		// Compaction: the latest record per key; gaps remain.
		{createArgs(0, 0, 0, true), []Input{
			{Procedure: "append", Args: []byte("a=1,b=2,a=3"), Time: ms(5)},
			{Procedure: "append", Args: []byte("c=4,b=5"), Time: ms(6)}},
			"[0,5) n3 b6: 2:a=3@5 3:c=4@6 4:b=5@6"},
		// Compaction then count: live records count.
		{createArgs(2, 0, 0, true), []Input{
			{Procedure: "append", Args: []byte("a=1,b=2,a=3,c=4"), Time: ms(5)}},
			"[2,4) n2 b4: 2:a=3@5 3:c=4@5"},
	}
	for i, tt := range tests {
		e := newEngine(t, Config{Partitions: 1}, streamProcs())
		if err := runErr(e, Input{Procedure: "create", Scope: []int{0}, Args: tt.cfg}); err != nil {
			t.Fatalf("#%d: create: %v", i, err)
		}
		exec(e, tt.ins...)
		if got := readAll(t, e); got != tt.want {
			t.Errorf("#%d: got %s, want %s", i, got, tt.want)
		}
		checkHashes(t, e)
	}
}

func TestStreamCompactionReadsSkipGaps(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1}, streamProcs())
	exec(e, Input{Procedure: "create", Scope: []int{0}, Args: createArgs(0, 0, 0, true)},
		Input{Procedure: "append", Args: []byte("a=1,b=2,a=3,b=4,c=5")})
	p := e.Partitions()[0]
	tests := []struct {
		offset   uint64
		max      int
		wantOffs string
		wantNext uint64
	}{
		{0, 10, "2 3 4", 5},
		{0, 1, "2", 3},
		{1, 2, "2 3", 4},
		{3, 1, "3", 4},
		{0, 0, "", 2}, // nothing read: on from the first live record
		{5, 10, "", 5},
	}
	for i, tt := range tests {
		recs, next, err := p.ReadStream("s", tt.offset, tt.max)
		var offs []string
		for _, r := range recs {
			offs = append(offs, fmt.Sprint(r.Offset))
		}
		if got := strings.Join(offs, " "); got != tt.wantOffs || next != tt.wantNext || err != nil {
			t.Errorf("#%d: ReadStream(%d, %d) = %q, %d, %v; want %q, %d", i, tt.offset, tt.max, got, next, err, tt.wantOffs, tt.wantNext)
		}
	}
}

func TestStreamTrimmedReadAndTypedErrors(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1}, streamProcs())
	exec(e, Input{Procedure: "create", Scope: []int{0}, Args: createArgs(2, 0, 0, false)},
		Input{Procedure: "append", Args: []byte("a=1,b=2,c=3,d=4")})
	_, next, err := e.Partitions()[0].ReadStream("s", 1, 10)
	var te *OffsetTrimmedError
	if !errors.Is(err, ErrOffsetTrimmed) || !errors.As(err, &te) || te.First != 2 || next != 2 {
		t.Errorf("read below first: %v, next %d; want OffsetTrimmedError naming 2", err, next)
	}
	before := e.Hashes()
	errs := []struct {
		in   Input
		want error
	}{
		{Input{Procedure: "create", Scope: []int{0}, Args: createArgs(0, 0, 0, false)}, ErrStreamExists},
		{Input{Procedure: "create", Scope: []int{0}, Args: createArgs(-1, 0, 0, false)}, ErrBadRetention},
		{Input{Procedure: "append", Args: []byte("=v")}, ErrEmptyKey},
	}
	for i, tt := range errs {
		if err := runErr(e, tt.in); !errors.Is(err, tt.want) {
			t.Errorf("#%d: got %v, want %v", i, err, tt.want)
		}
	}
	if after := e.Hashes(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("failed inputs changed the state: hashes %x, want %x", after, before)
	}
	if err := runErr(e, Input{Procedure: "delete"}); err != nil {
		t.Fatal(err)
	}
	for i, in := range []Input{{Procedure: "delete"}, {Procedure: "append", Args: []byte("a=1")}} {
		if err := runErr(e, in); !errors.Is(err, ErrUnknownStream) {
			t.Errorf("#%d after delete: got %v, want ErrUnknownStream", i, err)
		}
	}
	if _, _, err := e.Partitions()[0].ReadStream("s", 0, 1); !errors.Is(err, ErrUnknownStream) {
		t.Errorf("read after delete: %v, want ErrUnknownStream", err)
	}
	if h := e.Partitions()[0].Hash(); h != 0 {
		t.Errorf("hash of an empty partition after delete = %x, want 0", h)
	}
}

// TestStreamOffsetsIndependentOfBatching: the same appends give the same offsets, records,
// trims and hashes whether they run one input per batch or all in one (invariant 1).
func TestStreamOffsetsIndependentOfBatching(t *testing.T) {
	var ins []Input
	for i := range 60 {
		ins = append(ins, Input{Procedure: "append", Args: fmt.Appendf(nil, "k%d=v%d,k%d=w", i%7, i, i%3), Time: ms(int64(1000 + 10*i))})
	}
	run := func(batch int) (string, []uint64) {
		e := newEngine(t, Config{Partitions: 1}, streamProcs())
		exec(e, Input{Procedure: "create", Scope: []int{0}, Args: createArgs(20, 200, 300, true)})
		var res []string
		for i := 0; i < len(ins); i += batch {
			for _, r := range exec(e, ins[i:min(i+batch, len(ins))]...) {
				res = append(res, r.String())
			}
		}
		checkHashes(t, e)
		return strings.Join(res, "|") + readAll(t, e), e.Hashes()
	}
	want, wantHash := run(1)
	for _, b := range []int{2, 7, 60} {
		if got, h := run(b); got != want || fmt.Sprint(h) != fmt.Sprint(wantHash) {
			t.Errorf("batch %d: got %s %x, want %s %x", b, got, h, want, wantHash)
		}
	}
}

// TestStreamHashCoversEveryField: two streams that differ in one field of one record, or
// in the definition, have different hashes.
func TestStreamHashCoversEveryField(t *testing.T) {
	hash := func(cfg []byte, recs string, time int64) uint64 {
		e := newEngine(t, Config{Partitions: 1}, streamProcs())
		exec(e, Input{Procedure: "create", Scope: []int{0}, Args: cfg},
			Input{Procedure: "append", Args: []byte(recs), Time: ms(time)})
		checkHashes(t, e)
		return e.Partitions()[0].Hash()
	}
	base := hash(createArgs(0, 0, 0, false), "a=1,b=2", 5)
	variants := []struct {
		name string
		h    uint64
	}{
		{"key", hash(createArgs(0, 0, 0, false), "a=1,c=2", 5)},
		{"value", hash(createArgs(0, 0, 0, false), "a=1,b=3", 5)},
		{"key/value boundary", hash(createArgs(0, 0, 0, false), "a=1,b2=", 5)},
		{"event time", hash(createArgs(0, 0, 0, false), "a=1,b=2", 6)},
		{"offset", hash(createArgs(0, 0, 0, false), "b=2,a=1", 5)},
		{"max records", hash(createArgs(9, 0, 0, false), "a=1,b=2", 5)},
		{"max bytes", hash(createArgs(0, 9, 0, false), "a=1,b=2", 5)},
		{"max age", hash(createArgs(0, 0, 1e6, false), "a=1,b=2", 5)},
		{"compact", hash(createArgs(0, 0, 0, true), "a=1,b=2", 5)},
	}
	// The same live records and next offset, but a different first offset: a compacted
	// record leaves the first offset at 0, a trimmed one moves it to 1.
	if hash(createArgs(2, 0, 0, true), "a=1,a=2,b=3", 5) == hash(createArgs(2, 0, 0, true), "c=9,a=2,b=3", 5) {
		t.Errorf("changing the first offset leaves the hash unchanged")
	}
	for _, v := range variants {
		if v.h == base {
			t.Errorf("changing the %s leaves the hash unchanged", v.name)
		}
	}
}

func TestStreamSnapshotRoundTrip(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1}, streamProcs())
	exec(e, Input{Procedure: "create", Scope: []int{0}, Args: createArgs(3, 0, 0, true)},
		Input{Procedure: "append", Args: []byte("a=1,b=2,a=3,c=4@77,d=5"), Time: ms(9)})
	snap := e.Snapshot()
	// Changes after the snapshot must not reach it (compaction changes entries in place).
	exec(e, Input{Procedure: "append", Args: []byte("c=9,d=9"), Time: ms(10)})
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	want := "[2,5) n3 b6: 2:a=3@9 3:c=4@77 4:d=5@9"
	r := newEngine(t, Config{Partitions: 1}, streamProcs())
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r); got != want {
		t.Errorf("restored %s, want %s", got, want)
	}
	checkHashes(t, r)
	// The restored stream goes on exactly like the original.
	exec(r, Input{Procedure: "append", Args: []byte("c=9,d=9"), Time: ms(10)})
	if got, want := readAll(t, r), readAll(t, e); got != want {
		t.Errorf("after restore and the same append: %s, want %s", got, want)
	}
	if fmt.Sprint(r.Hashes()) != fmt.Sprint(e.Hashes()) {
		t.Errorf("hashes %x, want %x", r.Hashes(), e.Hashes())
	}
	// A version 1 snapshot is refused with a clear error.
	old := append([]byte{1}, buf.Bytes()[1:]...)
	if err := r.Restore(bytes.NewReader(old)); !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("restore of format 1: %v, want ErrBadSnapshot naming version 1", err)
	}
}

// TestStreamRetentionFreesMemory appends 10^6 records to a stream that keeps 1000: the
// heap stays bounded because trimmed records are freed, not pinned by a slice.
func TestStreamRetentionFreesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 10^6 records")
	}
	e := newEngine(t, Config{Partitions: 1, Sequential: true}, procs{
		"create": streamProcs()["create"],
		"append": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			_, err := tx.Append("s", in.Args, make([]byte, 100), 0)
			return out, err
		},
	})
	exec(e, Input{Procedure: "create", Scope: []int{0}, Args: createArgs(1000, 0, 0, false)})
	batch := make([]Input, 1000)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var base uint64
	for round := range 1000 {
		for i := range batch {
			batch[i] = Input{Procedure: "append", Args: fmt.Appendf(nil, "k%d", round*1000+i)}
		}
		e.Execute(batch)
		if round == 10 {
			base = heap()
		}
	}
	info, _ := e.Partitions()[0].StreamInfo("s")
	if info.Records != 1000 || info.NextOffset != 1e6 || info.FirstOffset != 1e6-1000 {
		t.Fatalf("stream %+v, want 1000 records ending at 10^6", info)
	}
	// 10^6 records of ~110 bytes would be over 100 MB; 1000 kept are ~0.2 MB.
	if grown := int64(heap()) - int64(base); grown > 8<<20 {
		t.Errorf("heap grew by %d bytes over 10^6 appends with 1000 kept", grown)
	}
}
