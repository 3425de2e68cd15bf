package nexmark

import (
	"math"
	"strconv"
	"strings"
)

// Value helpers, after Beam's StringsGenerator, PriceGenerator and PersonGenerator.

// Beam's lists of first names, last names, US states and cities.
var (
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
		"Seattle", "Kent", "Cheyenne"}
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

const (
	minStringLength = 3
	channels        = 10_000 // Beam's CHANNELS_NUMBER
)

// price is Beam's nextPrice: cents, log-uniform between 1 and 10^6 dollars.
func (r *rng) price() int64 { return int64(math.Round(math.Pow(10, r.float64()*6) * 100)) }

// str is a string of 3..max-1 lower-case letters with an occasional space.
func (r *rng) str(max int) string {
	return r.exact(minStringLength + r.intn(max-minStringLength))
}

// exact is a string of n lower-case letters with an occasional space.
func (r *rng) exact(n int) string {
	var b strings.Builder
	b.Grow(n)
	for range n {
		if r.intn(13) == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(byte('a' + r.intn(26)))
		}
	}
	return b.String()
}

// extra pads an event of size bytes towards an average of avg bytes (Beam's nextExtra:
// ±20 % around the missing bytes); nothing once size reaches avg or padding is off.
func (r *rng) extra(size, avg int) string {
	if avg <= 0 || size >= avg {
		return ""
	}
	want := avg - size
	delta := int(math.Round(float64(want) * 0.2))
	n := want - delta
	if delta > 0 {
		n += r.intn(2 * delta)
	}
	return r.exact(n)
}

// creditCard is four groups of four digits.
func (r *rng) creditCard() string {
	var b strings.Builder
	for i := range 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		s := strconv.Itoa(r.intn(10_000))
		b.WriteString(strings.Repeat("0", 4-len(s)) + s)
	}
	return b.String()
}

// channel is a bid's channel and URL: one of the hot channels half the time (Beam's
// HOT_CHANNELS_RATIO 2), else one of 10 000 numbered ones.
func (r *rng) channel() (string, string) {
	if r.intn(2) > 0 {
		i := r.intn(len(hotChannels))
		return hotChannels[i], "https://www.nexmark.com/" + strings.ToLower(hotChannels[i]) + "/item.htm?query=1"
	}
	n := r.intn(channels)
	return "channel-" + strconv.Itoa(n), "https://www.nexmark.com/" + r.letters(5) + "/" + r.letters(5) + "/item.htm?query=1&channel_id=" + strconv.Itoa(n)
}

// letters is a string of n lower-case letters.
func (r *rng) letters(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.intn(26))
	}
	return string(b)
}
