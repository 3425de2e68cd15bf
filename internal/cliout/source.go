package cliout

import (
	"fmt"
	"io"

	"github.com/lockstepdb/lockstep/client/kafka"
)

// SourceLags renders a Kafka source's lag per partition (kafka.SourceStatus): JSON as
// is, or a table with a total row.
func SourceLags(w io.Writer, format string, lags []kafka.PartitionLag) error {
	if format == JSON {
		return WriteJSON(w, lags)
	}
	tw := NewTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tNEXT\tEND\tLAG\tGENERATION")
	var total int64
	for _, l := range lags {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", l.Topic, l.Partition, l.Next, l.End, l.Lag, l.Generation)
		total += l.Lag
	}
	fmt.Fprintf(tw, "total\t\t\t\t%d\t\n", total)
	return tw.Flush()
}
