package batch

import "testing"

// TestNextTime: batch time is the stamp, or the previous batch time when the stamp is
// earlier — it never goes backwards (DESIGN.md section 1).
func TestNextTime(t *testing.T) {
	for i, tc := range []struct{ last, t, want int64 }{
		{0, 5, 5}, {5, 5, 5}, {5, 9, 9}, {9, 4, 9}, {-3, -7, -3},
	} {
		if got := NextTime(tc.last, tc.t); got != tc.want {
			t.Errorf("#%d: NextTime(%d, %d) = %d, want %d", i, tc.last, tc.t, got, tc.want)
		}
	}
}

// TestEntryTime: the batch time read from an entry's first bytes is the one AppendEntry
// wrote; bytes that do not begin an entry of this version give false.
func TestEntryTime(t *testing.T) {
	for i, want := range []int64{0, 1, -1, 1 << 62, 1893456000123456789} {
		b := AppendEntry(nil, &Entry{Time: want, Items: []Item{{Kind: KindTick}}})
		if got, ok := EntryTime(b); !ok || got != want {
			t.Errorf("#%d: EntryTime = %d, %t; want %d, true", i, got, ok, want)
		}
	}
	for i, b := range [][]byte{nil, {}, {Version}, {Version + 1, 2}, {Version, 0x80}} {
		if got, ok := EntryTime(b); ok {
			t.Errorf("#%d: EntryTime(%x) = %d, true; want false", i, b, got)
		}
	}
}
