package wire

// Messages are msgpack maps keyed by the short names in the struct tags, so any msgpack
// library can read and write them. The Append functions write only non-zero fields, use
// the smallest integer and length forms, and allocate nothing beyond growing dst. The
// Decode functions accept any valid msgpack encoding of a message (keys in any order,
// integers in any width, nil for an absent value), skip keys they do not know (fields
// added by newer peers), and reject with an error wrapping ErrMalformed: a body that is
// not one map, trailing bytes after it, a value of the wrong type or out of range, a
// duplicated key, and a list longer than MaxListLen. Decoded []byte fields and list
// elements share the memory of the decoded body; empty ones decode as nil.

// Message names, for error messages.
const (
	msgHello    = "hello"
	msgRequest  = "request"
	msgResponse = "response"
)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AppendHello appends the encoding of h to dst and returns the extended buffer.
func AppendHello(dst []byte, h *Hello) []byte {
	return appendHello(dst, h, false)
}

// helloEOLKey is the key of the line end a client's Hello carries (see ClientHandshake);
// no server reads it.
const helloEOLKey = "eol"

// appendHello is AppendHello; with eol it adds the key helloEOLKey with the value "\r\n".
func appendHello(dst []byte, h *Hello, eol bool) []byte {
	dst = appendMapHeader(dst, b2i(h.Version != 0)+b2i(h.ClusterID != "")+b2i(h.NodeID != "")+b2i(eol))
	if h.Version != 0 {
		dst = appendUint(appendStr(dst, "v"), uint64(h.Version))
	}
	if h.ClusterID != "" {
		dst = appendStr(appendStr(dst, "cid"), h.ClusterID)
	}
	if h.NodeID != "" {
		dst = appendStr(appendStr(dst, "nid"), h.NodeID)
	}
	if eol {
		dst = appendStr(appendStr(dst, helloEOLKey), "\r\n")
	}
	return dst
}

// DecodeHello decodes the body b into h, replacing all of h.
func DecodeHello(b []byte, h *Hello) error {
	*h = Hello{}
	d := decoder{b: b, msg: msgHello}
	return d.fields(func(k []byte) (f uint, err error) {
		switch string(k) {
		case "v":
			f, err = 1, decodeUint(&d, &h.Version)
		case "cid":
			f = 2
			h.ClusterID, err = d.readStr()
		case "nid":
			f = 3
			h.NodeID, err = d.readStr()
		default:
			err = d.skip()
		}
		return f, err
	})
}

// AppendRequest appends the encoding of r to dst and returns the extended buffer.
func AppendRequest(dst []byte, r *Request) []byte {
	n := b2i(r.ID != 0) + b2i(r.Op != 0) + b2i(r.Session != 0) + b2i(r.Seq != 0) +
		b2i(r.AckThrough != 0) + b2i(r.Procedure != "") + b2i(len(r.Key) != 0) + b2i(r.HasKey) +
		b2i(len(r.Keys) != 0) + b2i(len(r.Args) != 0) + b2i(r.Consistency != 0) +
		b2i(r.Stream != "") + b2i(r.Partition != 0) + b2i(r.Offset != 0) + b2i(r.Max != 0) + b2i(r.Full) +
		b2i(r.Sub != 0) + b2i(r.Bytes != 0) + b2i(r.MinIndex != 0) + b2i(r.Earliest) +
		b2i(r.Term != 0) + b2i(r.LeaderID != "") + b2i(r.MaxLag != 0)
	dst = appendMapHeader(dst, n)
	if r.ID != 0 {
		dst = appendUint(appendStr(dst, "id"), r.ID)
	}
	if r.Op != 0 {
		dst = appendUint(appendStr(dst, "op"), uint64(r.Op))
	}
	if r.Session != 0 {
		dst = appendUint(appendStr(dst, "ses"), r.Session)
	}
	if r.Seq != 0 {
		dst = appendUint(appendStr(dst, "seq"), r.Seq)
	}
	if r.AckThrough != 0 {
		dst = appendUint(appendStr(dst, "ack"), r.AckThrough)
	}
	if r.Procedure != "" {
		dst = appendStr(appendStr(dst, "proc"), r.Procedure)
	}
	if len(r.Key) != 0 {
		dst = appendBin(appendStr(dst, "key"), r.Key)
	}
	if r.HasKey {
		dst = appendBool(appendStr(dst, "hk"), true)
	}
	if len(r.Keys) != 0 {
		dst = appendBinList(appendStr(dst, "keys"), r.Keys)
	}
	if len(r.Args) != 0 {
		dst = appendBin(appendStr(dst, "args"), r.Args)
	}
	if r.Consistency != 0 {
		dst = appendUint(appendStr(dst, "cons"), uint64(r.Consistency))
	}
	if r.Stream != "" {
		dst = appendStr(appendStr(dst, "strm"), r.Stream)
	}
	if r.Partition != 0 {
		dst = appendInt(appendStr(dst, "part"), int64(r.Partition))
	}
	if r.Offset != 0 {
		dst = appendUint(appendStr(dst, "off"), r.Offset)
	}
	if r.Max != 0 {
		dst = appendUint(appendStr(dst, "max"), uint64(r.Max))
	}
	if r.Full {
		dst = appendBool(appendStr(dst, "full"), true)
	}
	if r.Sub != 0 {
		dst = appendUint(appendStr(dst, "sub"), r.Sub)
	}
	if r.Bytes != 0 {
		dst = appendUint(appendStr(dst, "bytes"), r.Bytes)
	}
	if r.MinIndex != 0 {
		dst = appendUint(appendStr(dst, "midx"), r.MinIndex)
	}
	if r.Earliest {
		dst = appendBool(appendStr(dst, "early"), true)
	}
	if r.Term != 0 {
		dst = appendUint(appendStr(dst, "term"), r.Term)
	}
	if r.LeaderID != "" {
		dst = appendStr(appendStr(dst, "lid"), r.LeaderID)
	}
	if r.MaxLag != 0 {
		dst = appendUint(appendStr(dst, "mlag"), r.MaxLag)
	}
	return dst
}

// DecodeRequest decodes the body b into r, replacing all of r. r's []byte fields share
// b's memory: b must not change while r is in use. On error r holds the fields decoded
// before the error, so a nonzero r.ID names the request to answer with CodeMalformed.
func DecodeRequest(b []byte, r *Request) error {
	*r = Request{}
	d := decoder{b: b, msg: msgRequest}
	return d.fields(func(k []byte) (f uint, err error) {
		switch string(k) {
		case "id":
			f, err = 1, decodeUint(&d, &r.ID)
		case "op":
			f, err = 2, decodeUint(&d, &r.Op)
		case "ses":
			f, err = 3, decodeUint(&d, &r.Session)
		case "seq":
			f, err = 4, decodeUint(&d, &r.Seq)
		case "ack":
			f, err = 5, decodeUint(&d, &r.AckThrough)
		case "proc":
			f = 6
			r.Procedure, err = d.readStr()
		case "key":
			f = 7
			r.Key, err = d.readBin()
		case "hk":
			f = 8
			r.HasKey, err = d.readBool()
		case "keys":
			f = 9
			r.Keys, err = d.readBinList()
		case "args":
			f = 10
			r.Args, err = d.readBin()
		case "cons":
			f, err = 11, decodeUint(&d, &r.Consistency)
		case "strm":
			f = 12
			r.Stream, err = d.readStr()
		case "part":
			f = 13
			r.Partition, err = d.readInt32()
		case "off":
			f, err = 14, decodeUint(&d, &r.Offset)
		case "max":
			f, err = 15, decodeUint(&d, &r.Max)
		case "full":
			f = 16
			r.Full, err = d.readBool()
		case "sub":
			f, err = 17, decodeUint(&d, &r.Sub)
		case "bytes":
			f, err = 18, decodeUint(&d, &r.Bytes)
		case "midx":
			f, err = 19, decodeUint(&d, &r.MinIndex)
		case "early":
			f = 20
			r.Earliest, err = d.readBool()
		case "term":
			f, err = 21, decodeUint(&d, &r.Term)
		case "lid":
			f = 22
			r.LeaderID, err = d.readStr()
		case "mlag":
			f, err = 23, decodeUint(&d, &r.MaxLag)
		default:
			err = d.skip()
		}
		return f, err
	})
}

// AppendResponse appends the encoding of r to dst and returns the extended buffer.
func AppendResponse(dst []byte, r *Response) []byte {
	n := b2i(r.ID != 0) + b2i(r.Code != 0) + b2i(r.Message != "") + b2i(len(r.Value) != 0) +
		b2i(r.Leader != "") + b2i(r.Session != 0) + b2i(len(r.Records) != 0) + b2i(r.NextOffset != 0) +
		b2i(len(r.Entries) != 0) + b2i(r.Sub != 0) + b2i(r.Index != 0)
	dst = appendMapHeader(dst, n)
	if r.ID != 0 {
		dst = appendUint(appendStr(dst, "id"), r.ID)
	}
	if r.Code != 0 {
		dst = appendUint(appendStr(dst, "code"), uint64(r.Code))
	}
	if r.Message != "" {
		dst = appendStr(appendStr(dst, "msg"), r.Message)
	}
	if len(r.Value) != 0 {
		dst = appendBin(appendStr(dst, "val"), r.Value)
	}
	if r.Leader != "" {
		dst = appendStr(appendStr(dst, "ldr"), r.Leader)
	}
	if r.Session != 0 {
		dst = appendUint(appendStr(dst, "ses"), r.Session)
	}
	if len(r.Records) != 0 {
		dst = appendBinList(appendStr(dst, "recs"), r.Records)
	}
	if r.NextOffset != 0 {
		dst = appendUint(appendStr(dst, "next"), r.NextOffset)
	}
	if len(r.Entries) != 0 {
		dst = appendStreamRecords(appendStr(dst, "ents"), r.Entries)
	}
	if r.Sub != 0 {
		dst = appendUint(appendStr(dst, "sub"), r.Sub)
	}
	if r.Index != 0 {
		dst = appendUint(appendStr(dst, "idx"), r.Index)
	}
	return dst
}

// DecodeResponse decodes the body b into r, replacing all of r. r's []byte fields share
// b's memory: b must not change while r is in use.
func DecodeResponse(b []byte, r *Response) error {
	*r = Response{}
	d := decoder{b: b, msg: msgResponse}
	return d.fields(func(k []byte) (f uint, err error) {
		switch string(k) {
		case "id":
			f, err = 1, decodeUint(&d, &r.ID)
		case "code":
			f, err = 2, decodeUint(&d, &r.Code)
		case "msg":
			f = 3
			r.Message, err = d.readStr()
		case "val":
			f = 4
			r.Value, err = d.readBin()
		case "ldr":
			f = 5
			r.Leader, err = d.readStr()
		case "ses":
			f, err = 6, decodeUint(&d, &r.Session)
		case "recs":
			f = 7
			r.Records, err = d.readBinList()
		case "next":
			f, err = 8, decodeUint(&d, &r.NextOffset)
		case "ents":
			f = 9
			r.Entries, err = d.readStreamRecords()
		case "sub":
			f, err = 10, decodeUint(&d, &r.Sub)
		case "idx":
			f, err = 11, decodeUint(&d, &r.Index)
		default:
			err = d.skip()
		}
		return f, err
	})
}

// fields reads a map of fields, calling field to decode each one. field returns the
// field's number (0 for an unknown key, which it skips), so a repeated field is refused,
// and every byte of the body must be consumed.
func (d *decoder) fields(field func(key []byte) (uint, error)) error {
	n, err := d.readMapLen()
	if err != nil {
		return err
	}
	var seen uint32
	for range n {
		k, err := d.readKey()
		if err != nil {
			return err
		}
		f, err := field(k)
		if err = d.seen(&seen, f, err); err != nil {
			return err
		}
	}
	return d.end()
}

// decodeUint reads an unsigned integer that fits in *dst.
func decodeUint[T ~uint8 | ~uint16 | ~uint32 | ~uint64](d *decoder, dst *T) error {
	v, err := d.readUint(uint64(^T(0)))
	*dst = T(v)
	return err
}
