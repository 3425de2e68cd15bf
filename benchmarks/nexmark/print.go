package nexmark

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// WriteEvents writes the events of positions [from, from+n) of g to w, a chunk at a time:
// as JSON, one object per line, or (asJSON false) as a table with a header, one line per
// event (position, number, stream, key, event time, columns as JSON).
func WriteEvents(w io.Writer, g *Generator, from, n int64, asJSON bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // URLs print as they are
	if !asJSON {
		if _, err := fmt.Fprintf(w, "%-8s  %-8s  %-7s  %-8s  %-24s  %s\n", "POSITION", "NUMBER", "STREAM", "KEY", "TIME", "COLUMNS"); err != nil {
			return err
		}
	}
	end := from + n
	for at := from; at < end; at += 1000 {
		evs, err := g.Slice(at, min(at+1000, end))
		if err != nil {
			return err
		}
		for i := range evs {
			e := &evs[i]
			if asJSON {
				if err := enc.Encode(e); err != nil {
					return err
				}
				continue
			}
			cols, _ := json.Marshal(map[Kind]any{KindPerson: e.Person, KindAuction: e.Auction, KindBid: e.Bid}[e.Kind])
			if _, err := fmt.Fprintf(w, "%-8d  %-8d  %-7s  %-8s  %-24s  %s\n", at+int64(i), e.Number, e.Stream(), e.Key(),
				time.UnixMilli(e.Time()).UTC().Format("2006-01-02T15:04:05.000Z"), cols); err != nil {
				return err
			}
		}
	}
	return nil
}
