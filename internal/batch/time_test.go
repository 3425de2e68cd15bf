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
