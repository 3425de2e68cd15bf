package modbench

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// Click is a click record, as the Go processor decodes it.
type Click struct {
	User  string `msgpack:"user"`
	Page  string `msgpack:"page"`
	Agent string `msgpack:"agent"`
	Ms    int64  `msgpack:"ms"`
}

// TotalArgs are the (empty) arguments of the total procedure.
type TotalArgs struct{}

// RegisterGo registers the processor and the total procedure as Go code in reg.
func RegisterGo(reg *procedures.Registry) error {
	if err := procedures.RegisterProcessor(reg, Processor, Stream, count,
		procedures.ProcessorDoc("counts non-bot clicks per page and 1 s window (Go)")); err != nil {
		return err
	}
	return procedures.Register(reg, Total, total, procedures.ReadOnly(), procedures.MultiPartition(),
		procedures.Doc("[sum of the window counts, distinct windows] (Go)"))
}

// windowKey is the row of page's window holding event time ms: "page@start".
func windowKey(page string, ms int64) []byte {
	start := ms - ms%WindowMs
	return strconv.AppendInt(append([]byte(page), '@'), start, 10)
}

// count is the processor: decode, drop bots, add one to the record's window row. The
// count is a big-endian uint64, Go's natural encoding, as Starlark's is a msgpack int.
func count(tx *partition.Tx, rec partition.Record) error {
	var c Click
	if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
		return err
	}
	if strings.HasPrefix(c.Agent, "bot") {
		return nil
	}
	key := windowKey(c.Page, rec.EventTime)
	var n uint64
	if old, ok := tx.Get(Table, key); ok && len(old) == 8 {
		n = binary.BigEndian.Uint64(old)
	}
	return tx.Put(Table, key, binary.BigEndian.AppendUint64(nil, n+1))
}

// total sums the counts of every partition: [sum, distinct page windows] (each partition
// counts its own records, so a page's window has a row on every partition that saw it).
func total(tx *partition.Tx, _ TotalArgs) ([]int64, error) {
	var sum int64
	keys := map[string]bool{}
	for p := range tx.Partitions() {
		ptx, err := tx.On(p)
		if err != nil {
			return nil, err
		}
		err = ptx.Scan(Table, partition.ScanOptions{}, func(k, v []byte) bool {
			if len(v) == 8 {
				sum += int64(binary.BigEndian.Uint64(v))
			}
			keys[string(k)] = true
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return []int64{sum, int64(len(keys))}, nil
}
