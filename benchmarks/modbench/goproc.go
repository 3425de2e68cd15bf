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

// TotalArgs are the arguments of the total procedure: one page of partition P's rows,
// from key Start on (nil: the first), at most Limit.
type TotalArgs struct {
	P     int     `msgpack:"p"`
	Start *string `msgpack:"start"`
	Limit int     `msgpack:"limit"`
}

// TotalPage is the total procedure's answer: the counts' sum over the page's rows, the
// rows, and the Start of the next page (nil after the last).
type TotalPage struct {
	Sum  int64   `msgpack:"sum"`
	Rows int64   `msgpack:"rows"`
	Next *string `msgpack:"next"`
}

// RegisterGo registers the processor and the total procedure as Go code in reg.
func RegisterGo(reg *procedures.Registry) error {
	if err := procedures.RegisterProcessor(reg, Processor, Stream, count,
		procedures.ProcessorDoc("counts non-bot clicks per page and 1 s window (Go)")); err != nil {
		return err
	}
	return procedures.Register(reg, Total, total, procedures.ReadOnly(), procedures.MultiPartition(),
		procedures.Doc("one page of a partition's counts: {sum, rows, next} (Go)"))
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

// total is one page of partition a.P's counts: the rows from a.Start on, at most a.Limit.
func total(tx *partition.Tx, a TotalArgs) (TotalPage, error) {
	ptx, err := tx.On(a.P)
	if err != nil {
		return TotalPage{}, err
	}
	var page TotalPage
	var last []byte
	opts := partition.ScanOptions{Limit: a.Limit}
	if a.Start != nil {
		opts.Start = []byte(*a.Start)
	}
	err = ptx.Scan(Table, opts, func(k, v []byte) bool {
		if len(v) == 8 {
			page.Sum += int64(binary.BigEndian.Uint64(v))
		}
		page.Rows++
		last = k
		return true
	})
	if err != nil {
		return TotalPage{}, err
	}
	if a.Limit > 0 && page.Rows == int64(a.Limit) {
		next := string(last) + "\x00"
		page.Next = &next
	}
	return page, nil
}
