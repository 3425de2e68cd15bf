package nexmark

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestCodecRoundTrip: every generated event decodes back to itself, and its value is
// the generic msgpack map of its columns (what any msgpack library, the SQL layer's
// included, reads by column name).
func TestCodecRoundTrip(t *testing.T) {
	for _, e := range mustSlice(t, mustGen(t, Config{Events: 500}), 0, 500) {
		v := e.Value()
		var got any
		var err error
		switch e.Kind {
		case KindPerson:
			got, err = DecodePerson(v)
			got = ptrTo(got.(Person))
		case KindAuction:
			got, err = DecodeAuction(v)
			got = ptrTo(got.(Auction))
		default:
			got, err = DecodeBid(v)
			got = ptrTo(got.(Bid))
		}
		want := map[Kind]any{KindPerson: e.Person, KindAuction: e.Auction, KindBid: e.Bid}[e.Kind]
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("event %d: decoded %+v, %v; want %+v", e.Number, got, err, want)
		}
		var m map[string]any
		if err := msgpack.Unmarshal(v, &m); err != nil {
			t.Fatalf("event %d: not a msgpack map: %v", e.Number, err)
		}
		if n := reflect.TypeOf(want).Elem().NumField(); len(m) != n {
			t.Fatalf("event %d: %d columns, want %d", e.Number, len(m), n)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestCodecRejects: unknown, missing, repeated, null and mistyped columns and trailing
// bytes are ErrBadRecord.
func TestCodecRejects(t *testing.T) {
	good := (&Bid{Auction: 1, Bidder: 2, Price: 3, Channel: "c", URL: "u", DateTime: 4, Extra: "x"}).Encode()
	if _, err := DecodeBid(good); err != nil {
		t.Fatalf("good bid: %v", err)
	}
	enc := func(m map[string]any) []byte {
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := func() map[string]any {
		return map[string]any{"auction": 1, "bidder": 2, "price": 3, "channel": "c", "url": "u", "date_time": 4, "extra": "x"}
	}
	unknown := full()
	delete(unknown, "extra")
	unknown["extras"] = "x"
	missing := full()
	delete(missing, "url")
	null := full()
	null["price"] = nil
	mistyped := full()
	mistyped["price"] = "3"
	mistyped2 := full()
	mistyped2["channel"] = 7
	for i, bad := range [][]byte{
		nil, {0xc0}, []byte("not msgpack"), append(append([]byte(nil), good...), 0x01),
		enc(unknown), enc(missing), enc(null), enc(mistyped), enc(mistyped2),
		(&Person{ID: 1}).Encode(),
	} {
		if _, err := DecodeBid(bad); !errors.Is(err, ErrBadRecord) {
			t.Errorf("#%d: DecodeBid(%x) = %v, want ErrBadRecord", i, bad, err)
		}
		for _, extra := range []bool{false, true} {
			if _, err := DecodeBidNumbers(bad, extra); !errors.Is(err, ErrBadRecord) {
				t.Errorf("#%d: DecodeBidNumbers(%x, %v) = %v, want ErrBadRecord", i, bad, extra, err)
			}
		}
	}
	// A repeated column: a map of 7 entries naming price twice.
	w := newWriter(7)
	w.int("auction", 1)
	w.int("price", 2)
	w.int("price", 3)
	w.str("channel", "c")
	w.str("url", "u")
	w.int("date_time", 4)
	w.str("extra", "x")
	if _, err := DecodeBid(w.b); !errors.Is(err, ErrBadRecord) {
		t.Errorf("repeated column: %v, want ErrBadRecord", err)
	}
}

func FuzzDecodeBid(f *testing.F) {
	f.Add((&Bid{Auction: 1, Price: 2, Channel: "c"}).Encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBid(data)
		n, errN := DecodeBidNumbers(data, true)
		if (err == nil) != (errN == nil) {
			t.Fatalf("DecodeBid: %v, DecodeBidNumbers: %v", err, errN)
		}
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if want := (Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra}); n != want {
			t.Fatalf("DecodeBidNumbers: %+v, want %+v", n, want)
		}
		if _, err := DecodeBid(b.Encode()); err != nil {
			t.Fatalf("re-encoding of a decoded bid fails: %v", err)
		}
	})
}

// BenchmarkDecodeBid: a bid decoded whole, and with the strings q2 drops left unbuilt.
func BenchmarkDecodeBid(b *testing.B) {
	g, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	evs, _ := g.Slice(0, 1000)
	var bids [][]byte
	for i := range evs {
		if evs[i].Kind == KindBid {
			bids = append(bids, evs[i].Value())
		}
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) (Bid, error)
	}{
		{"whole", DecodeBid},
		{"numbers", func(v []byte) (Bid, error) { return DecodeBidNumbers(v, false) }},
		{"numbers+extra", func(v []byte) (Bid, error) { return DecodeBidNumbers(v, true) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.decode(bids[i%len(bids)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
