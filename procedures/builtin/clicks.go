package builtin

// The built-in click pipeline (procedures.RegisterClickPipeline; docs/streams.md, "The
// built-in pipeline"): clicks keyed by user are repartitioned by page, counted per page in
// tumbling event-time windows, and the results and the late clicks are written to
// streams. The user creates the input stream with stream.create; the processors declare
// the others as their outputs, and the runtime creates them (unbounded) once the input
// exists. The names are below (the built-in registry uses ClickPipelinePrefix; a copy
// registered with another prefix uses that prefix instead).

// Names of the built-in click pipeline's streams and processors, without a prefix.
const (
	// ClickPipelinePrefix prefixes every stream, processor and table name of the
	// built-in click pipeline, so that it never reads a user's own stream "clicks".
	ClickPipelinePrefix = "demo."
	// ClicksStream is the input: records keyed by user, values Click.
	ClicksStream = "clicks"
	// ClicksByPageStream holds the clicks repartitioned by page: key the page, value Click.
	// The processor that fills it has the same name.
	ClicksByPageStream = "clicks.by_page"
	// PageCountsStream holds the window results: key the page, value PageCount, event
	// time the window's end. The processor that fills it has the same name.
	PageCountsStream = "page_counts"
	// ClicksLateStream holds the clicks that came too late for every window: key the page,
	// value Click, event time the click's.
	ClicksLateStream = "clicks.late"
)

// MaxPageBytes is the longest page name a Click may carry.
const MaxPageBytes = 256

// Click is the value of a record of the click pipeline's input stream (msgpack).
type Click struct {
	// User is the user who clicked; empty means the record's key.
	User string `msgpack:"u,omitempty"`
	// Page is the page clicked, 1 to MaxPageBytes bytes. A click without a valid page
	// fails (it goes to the input's dead-letter stream).
	Page string `msgpack:"p"`
	// Time is the click's event time in Unix milliseconds, set by the producer; 0 means
	// the record's event time.
	Time int64 `msgpack:"t,omitempty"`
	// Watermark is set by the repartitioner on the records of clicks.by_page: the
	// exchange watermark (Unix ms) the click was emitted under, which the counter judges
	// it against (procedures/window.Source). Ignored on the input; never in the late
	// stream.
	Watermark int64 `msgpack:"w,omitempty"`
}

// PageCount is one result of a page's window (msgpack), the value of a record of the
// click pipeline's output stream. A window emits Revision 0 when the watermark passes its
// end, a further revision for each click it takes within the allowed lateness, and then a
// result with Final set: its count is the window's answer.
type PageCount struct {
	Page  string `msgpack:"p"`
	Start int64  `msgpack:"s"` // the window [Start, End), Unix milliseconds
	End   int64  `msgpack:"e"`
	Count int64  `msgpack:"n"`
	// Revision counts the window's earlier results; the highest is the current one.
	Revision int `msgpack:"r"`
	// Final marks the window's last result.
	Final bool `msgpack:"f"`
}
