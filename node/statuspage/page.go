package statuspage

import (
	"embed"
	"html/template"
	"io"
	"time"
)

// Page is what the status page shows.
type Page struct {
	// NodeID is the node that serves the page; Version its binary's version.
	NodeID, Version string
	// Generated is when the page was made; RefreshSeconds how often it reloads (≥ 1).
	Generated      time.Time
	RefreshSeconds int
	// Leader is the leader's id, empty if none is known.
	Leader string
	// Members are the cluster's nodes, in ClusterStatus order.
	Members []Member
	// Partitions are the state hashes per partition, one per answering member in Members
	// order (HashMembers names them).
	HashMembers []string
	Partitions  []HashRow
	// HashSummary says whether the replicas' hashes agree.
	HashSummary string
	// Problems are what is wrong with the cluster; none when healthy.
	Problems []string
	// Processors are this node's stream processors per partition.
	Processors []Processor
	// Events are this node's recent fault events, newest first.
	Events []Event
	// Error is why the cluster status could not be gathered, if it could not.
	Error string
}

// Member is one node of the cluster.
type Member struct {
	ID, Role, Addr, Version string
	Term, Applied, Lag      uint64
	Ready                   bool
	// Divergent, NotReady and Error explain a member that is not healthy; Error is set for
	// a node that did not answer.
	Divergent, NotReady, Error string
}

// HashRow is one partition's state hash on each member.
type HashRow struct {
	Partition int
	Hashes    []string
	// Differ is set when the members at one applied index disagree.
	Differ bool
}

// Processor is one processor on one partition.
type Processor struct {
	Name, Input                string
	Partition                  int
	Position, End, Lag         uint64
	DeadLetters, Skipped, Late uint64
	// Watermarks are the processor's window operators' watermarks, as "op: RFC 3339".
	Watermarks []string
}

// Event is one fault event.
type Event struct {
	Time    time.Time
	Kind    string
	Message string
	Count   int
}

//go:embed page.html.tmpl
var files embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"ts": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") },
}).ParseFS(files, "page.html.tmpl"))

// Render writes p as the HTML page.
func Render(w io.Writer, p Page) error {
	if p.RefreshSeconds < 1 {
		p.RefreshSeconds = 1
	}
	return page.Execute(w, p)
}
