package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Version is the current entry format version.
const Version = 1

// ErrMalformed is returned by DecodeEntry for bytes that are not a valid entry.
var ErrMalformed = errors.New("batch: malformed log entry")

// Limits that DecodeEntry enforces, so a corrupt entry cannot make a replica allocate
// without bound.
const (
	// MaxItems is the most items one entry may hold: an item's position fits in ItemBits
	// bits (see InputSeq).
	MaxItems = 1 << ItemBits
	// MaxScope is the most partitions one item's scope may name.
	MaxScope = 1024
)

// ItemBits is how many low bits of an input's sequence number hold the item's position in
// its entry (see InputSeq).
const ItemBits = 16

// The item positions of an entry, 0 to MaxItems-1, must fit in ItemBits bits: a compile
// error here (constant overflow) means MaxItems grew past them.
const _ uint = 1<<ItemBits - MaxItems

// InputSeq returns the sequence number of the input at position j of the entry at log
// index: index<<ItemBits | j, unique and increasing in log order, identical on every
// replica (it seeds the procedure's Tx.Rand). j must be in [0, MaxItems), which
// DecodeEntry guarantees; index must be below 1<<(64-ItemBits).
func InputSeq(index uint64, j int) uint64 {
	return index<<ItemBits | uint64(j)
}

// Kind says what an item asks the replicas to do.
type Kind uint8

// Item kinds. Append only: a kind's number is written into the log forever.
const (
	// KindInvoke runs Procedure on Partition (or on Scope) with Args for Session/Seq.
	KindInvoke Kind = 1
	// KindOpenSession opens a client session; the replicas give it the next id of their
	// session table (a counter, the same on every replica).
	KindOpenSession Kind = 2
	// KindCloseSession ends Session and frees its cached results.
	KindCloseSession Kind = 3
	// KindHashCheck asks every replica to record its partition hashes at this position.
	KindHashCheck Kind = 4
	// KindInitCluster fixes the cluster's identity; Args holds an encoded ClusterInfo.
	KindInitCluster Kind = 5
	// KindNodeInfo records a node's addresses; Args holds an encoded NodeInfo.
	KindNodeInfo Kind = 6
	// KindRemoveNode forgets a node's addresses; Key holds its id.
	KindRemoveNode Kind = 7
	// KindTick does nothing but give the replicas a log entry, and so a processor phase:
	// the leader appends one when processors have records pending or wait for time to
	// pass, so that their work goes on without new input.
	KindTick Kind = 8
	// KindUsers changes (or lists) the cluster's users table; Args holds an encoded
	// UserChange.
	KindUsers Kind = 9
	// KindClusterConfig reads or changes the cluster's replicated configuration (the
	// settings every replica must apply alike); Args holds an encoded ConfigChange.
	KindClusterConfig Kind = 10
)

func (k Kind) String() string {
	switch k {
	case KindInvoke:
		return "invoke"
	case KindOpenSession:
		return "open-session"
	case KindCloseSession:
		return "close-session"
	case KindHashCheck:
		return "hash-check"
	case KindInitCluster:
		return "init-cluster"
	case KindNodeInfo:
		return "node-info"
	case KindRemoveNode:
		return "remove-node"
	case KindTick:
		return "tick"
	case KindUsers:
		return "users"
	case KindClusterConfig:
		return "cluster-config"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Item is one input of a batch.
type Item struct {
	Kind Kind
	// Session and Seq identify a client request for exactly-once execution; 0 means
	// no session (read-only and control items).
	Session, Seq uint64
	// AckThrough tells the replicas the client has received every result of Session up
	// to this sequence number, so they may free those cached results.
	AckThrough uint64
	// Procedure names the procedure of an invoke.
	Procedure string
	// Key is the partition key of a single-partition invoke.
	Key []byte
	// Partition is the home partition of a single-partition invoke.
	Partition int32
	// Scope lists the partitions of a multi-partition invoke, ascending; nil otherwise.
	Scope []int
	// Args is the procedure's encoded arguments, or a control item's payload.
	Args []byte
}

// Entry is one Raft log entry: a batch of items stamped with the leader's clock.
type Entry struct {
	// Time is the batch time in Unix nanoseconds.
	Time  int64
	Items []Item
}

// AppendEntry appends the encoding of e to dst.
func AppendEntry(dst []byte, e *Entry) []byte {
	dst = append(dst, Version)
	dst = binary.AppendVarint(dst, e.Time)
	dst = binary.AppendUvarint(dst, uint64(len(e.Items)))
	for i := range e.Items {
		dst = AppendItem(dst, &e.Items[i])
	}
	return dst
}

// EntryOverhead bounds the bytes of an entry that are not items: version, time, count.
const EntryOverhead = 1 + 2*binary.MaxVarintLen64

// EntrySize is an upper bound of the encoded size of e.
func EntrySize(e *Entry) int {
	n := EntryOverhead
	for i := range e.Items {
		n += ItemSize(&e.Items[i])
	}
	return n
}

// AppendItem appends the encoding of one item, as AppendEntry lays it out.
func AppendItem(dst []byte, it *Item) []byte {
	dst = append(dst, byte(it.Kind))
	dst = binary.AppendUvarint(dst, it.Session)
	dst = binary.AppendUvarint(dst, it.Seq)
	dst = binary.AppendUvarint(dst, it.AckThrough)
	dst = appendBytes(dst, unsafe.Slice(unsafe.StringData(it.Procedure), len(it.Procedure)))
	dst = appendBytes(dst, it.Key)
	dst = binary.AppendVarint(dst, int64(it.Partition))
	if it.Scope == nil {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(it.Scope))+1)
		for _, p := range it.Scope {
			dst = binary.AppendUvarint(dst, uint64(p))
		}
	}
	return appendBytes(dst, it.Args)
}

// ItemSize is an upper bound of the encoded size of it, for batch byte limits.
func ItemSize(it *Item) int {
	return 1 + 4*binary.MaxVarintLen64 + 2*binary.MaxVarintLen32 + len(it.Procedure) + len(it.Key) +
		binary.MaxVarintLen32 + len(it.Scope)*binary.MaxVarintLen64 + len(it.Args) + binary.MaxVarintLen32
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// DecodeEntry decodes b into e, reusing e.Items. Key, Args and Procedure alias b: they are
// valid only as long as b is and must be copied to be kept.
func DecodeEntry(b []byte, e *Entry) error {
	d := decoder{b: b}
	if v := d.byte(); v != Version {
		return fmt.Errorf("%w: version %d", ErrMalformed, v)
	}
	e.Time = d.varint()
	n := d.uvarint()
	if d.err != nil || n > MaxItems || n > uint64(len(d.b)) {
		return fmt.Errorf("%w: item count", ErrMalformed)
	}
	if cap(e.Items) < int(n) {
		e.Items = make([]Item, n)
	}
	e.Items = e.Items[:n]
	for i := range e.Items {
		d.item(&e.Items[i])
		if d.err != nil {
			return fmt.Errorf("%w: item %d: %v", ErrMalformed, i, d.err)
		}
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return nil
}

// decoder reads the entry layout, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	if n == 0 {
		return nil
	}
	return v
}

func (d *decoder) item(it *Item) {
	it.Kind = Kind(d.byte())
	it.Session = d.uvarint()
	it.Seq = d.uvarint()
	it.AckThrough = d.uvarint()
	name := d.bytes()
	it.Procedure = unsafe.String(unsafe.SliceData(name), len(name))
	it.Key = d.bytes()
	p := d.varint()
	if p < -1<<31 || p > 1<<31-1 {
		d.fail(errors.New("partition out of range"))
	}
	it.Partition = int32(p)
	it.Scope = it.Scope[:0]
	switch n := d.uvarint(); {
	case n == 0:
		it.Scope = nil
	case n-1 > MaxScope || n-1 > uint64(len(d.b)):
		d.fail(errors.New("scope too large"))
	default:
		if it.Scope == nil {
			it.Scope = make([]int, 0, n-1)
		}
		for i := uint64(0); i < n-1; i++ {
			v := d.uvarint()
			if v > MaxScope {
				d.fail(errors.New("scope partition out of range"))
			}
			it.Scope = append(it.Scope, int(v))
		}
	}
	it.Args = d.bytes()
}
