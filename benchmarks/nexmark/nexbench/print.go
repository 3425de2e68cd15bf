package nexbench

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
)

// printEvents writes the events of --generate, a chunk at a time: JSON lines, or a table
// of one line per event.
func printEvents(w io.Writer, s Spec) error {
	g, err := nexmark.New(s.Gen)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // URLs print as they are
	if !s.JSON {
		fmt.Fprintf(w, "%-8s  %-8s  %-7s  %-8s  %-24s  %s\n", "POSITION", "NUMBER", "STREAM", "KEY", "TIME", "COLUMNS")
	}
	end := s.Feed.From + s.Feed.Events
	for from := s.Feed.From; from < end; from += 1000 {
		evs, err := g.Slice(from, min(from+1000, end))
		if err != nil {
			return err
		}
		for i := range evs {
			e := &evs[i]
			if s.JSON {
				if err := enc.Encode(e); err != nil {
					return err
				}
				continue
			}
			cols, _ := json.Marshal(map[nexmark.Kind]any{nexmark.KindPerson: e.Person, nexmark.KindAuction: e.Auction, nexmark.KindBid: e.Bid}[e.Kind])
			if _, err := fmt.Fprintf(w, "%-8d  %-8d  %-7s  %-8s  %-24s  %s\n", from+int64(i), e.Number, e.Stream(), e.Key(),
				time.UnixMilli(e.Time()).UTC().Format("2006-01-02T15:04:05.000Z"), cols); err != nil {
				return err
			}
		}
	}
	return nil
}
