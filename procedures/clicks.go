package procedures

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
)

// The click pipeline (docs/streams.md, "The built-in pipeline"): two processors.
//
//	P+clicks (key user, value builtin.Click)
//	  → processor P+clicks.by_page: emits each click to P+clicks.by_page, keyed by page
//	  → processor P+page_counts: counts clicks per page in tumbling event-time windows
//	    (window.Aggregate, tables P+page_counts.*), results to P+page_counts, late clicks
//	    to P+clicks.late.
//
// The watermark crosses the exchange (window.Source): each partition's repartitioner
// publishes its watermark (the latest click time it saw − OutOfOrderness) and stamps
// every click it emits with the exchange watermark, the minimum over the partitions that
// are not idle; the counter judges each click against its stamp and, on its OnTick hook,
// moves to the exchange watermark. So whether a click is late does not depend on where
// its page hashes to, and a pause never makes old clicks late.
//
// The repartitioner's name sorts before the counter's, so on each partition the counter
// sees the clicks emitted to its own partition in the same processor phase, and those
// from other partitions in the next.

// ErrBadClick fails a click record whose value is not a valid builtin.Click.
var ErrBadClick = errors.New("bad click")

// ClickPipelineConfig configures a click pipeline. Durations are whole milliseconds.
type ClickPipelineConfig struct {
	// Prefix prefixes the names of its streams, processors and tables.
	Prefix string
	// Window is the size of the tumbling windows.
	Window time.Duration
	// OutOfOrderness is how far behind the latest click seen (in event time) a click may
	// arrive and still be on time: the watermark is the latest event time − OutOfOrderness.
	OutOfOrderness time.Duration
	// AllowedLateness is how long after the watermark passes a window's end the window
	// still takes clicks, each emitting a new revision.
	AllowedLateness time.Duration
	// IdleTimeout: once no click has arrived at an input partition for IdleTimeout of
	// batch time, that partition stops holding the watermark back; when every partition
	// is idle the watermark is the highest of theirs (never batch time). IdleTimeout 0
	// turns this off: an input partition without clicks then holds every window open.
	IdleTimeout time.Duration
}

// DefaultClickPipeline is the configuration of the built-in click pipeline: 1-minute
// windows, 5 s out-of-orderness, 10 s allowed lateness, input partitions idle after 10 s.
var DefaultClickPipeline = ClickPipelineConfig{
	Prefix:          builtin.ClickPipelinePrefix,
	Window:          time.Minute,
	OutOfOrderness:  5 * time.Second,
	AllowedLateness: 10 * time.Second,
	IdleTimeout:     10 * time.Second,
}

// ClickPipelineStreams names the four streams of a click pipeline.
type ClickPipelineStreams struct {
	Clicks, ByPage, Counts, Late string
}

// Streams returns the names of the pipeline's streams. The user creates Clicks; the
// processors declare the others as outputs (Output), so the runtime creates them, unbounded,
// in the first processor phase after Clicks exists — unless they exist already, with the
// configuration they were created with.
func (c ClickPipelineConfig) Streams() ClickPipelineStreams {
	return ClickPipelineStreams{
		Clicks: c.Prefix + builtin.ClicksStream,
		ByPage: c.Prefix + builtin.ClicksByPageStream,
		Counts: c.Prefix + builtin.PageCountsStream,
		Late:   c.Prefix + builtin.ClicksLateStream,
	}
}

// RegisterClickPipeline registers the click pipeline's two processors in r, or neither:
// it fails like RegisterProcessor, or with window.ErrBadConfig for a bad configuration.
func RegisterClickPipeline(r *Registry, cfg ClickPipelineConfig) error {
	s := cfg.Streams()
	agg, err := window.New(window.Config[builtin.Click, int64]{
		Name:            cfg.Prefix + builtin.PageCountsStream,
		Assigner:        window.Tumbling{Size: cfg.Window.Milliseconds()},
		Exchange:        s.ByPage,
		AllowedLateness: cfg.AllowedLateness.Milliseconds(),
		Init:            func() int64 { return 0 },
		Add:             func(n int64, _ builtin.Click) int64 { return n + 1 },
		Emit: func(tx *partition.Tx, res window.Result[int64]) error {
			v, err := msgpack.Marshal(&builtin.PageCount{Page: string(res.Key), Start: res.Start, End: res.End,
				Count: res.Value, Revision: res.Revision, Final: res.Final})
			if err != nil {
				return err
			}
			_, err = tx.Append(s.Counts, res.Key, v, res.End)
			return err
		},
		Late: func(tx *partition.Tx, l window.LateRecord[builtin.Click]) error {
			v, err := msgpack.Marshal(&l.Value)
			if err != nil {
				return err
			}
			_, err = tx.Append(s.Late, l.Key, v, l.EventTime)
			return err
		},
	})
	if err != nil {
		return fmt.Errorf("click pipeline: %w", err)
	}
	src, err := window.NewSource(window.SourceConfig{Stream: s.ByPage,
		OutOfOrderness: cfg.OutOfOrderness.Milliseconds(), IdleTimeout: cfg.IdleTimeout.Milliseconds()})
	if err != nil {
		return fmt.Errorf("click pipeline: %w", err)
	}
	err = RegisterProcessor(r, cfg.Prefix+builtin.ClicksByPageStream, s.Clicks,
		func(tx *partition.Tx, rec partition.Record) error {
			c, err := decodeClick(rec)
			if err != nil {
				return err
			}
			if c.Watermark, err = src.Observe(tx, c.Time); err != nil {
				return err
			}
			v, err := msgpack.Marshal(&c)
			if err != nil {
				return err
			}
			return tx.Emit(s.ByPage, []byte(c.Page), v, c.Time)
		},
		Output(s.ByPage, partition.StreamConfig{}),
		ProcessorDoc("repartitions clicks by page"))
	if err != nil {
		return err
	}
	err = RegisterProcessor(r, cfg.Prefix+builtin.PageCountsStream, s.ByPage,
		func(tx *partition.Tx, rec partition.Record) error {
			var c builtin.Click
			if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
				return fmt.Errorf("%w: %w", ErrBadClick, err)
			}
			if c.Time == 0 {
				c.Time = rec.EventTime
			}
			stamp := c.Watermark
			c.Watermark = 0
			return agg.ProcessStamped(tx, rec.Key, c.Time, stamp, c)
		},
		Output(s.Counts, partition.StreamConfig{}), Output(s.Late, partition.StreamConfig{}),
		OnTick(agg.Advance),
		WindowOperators(cfg.Prefix+builtin.PageCountsStream), // its watermark and late count in `lockstep processors`
		ProcessorDoc("counts clicks per page in tumbling event-time windows"))
	if err != nil {
		delete(r.processors, cfg.Prefix+builtin.ClicksByPageStream) // all or nothing
	}
	return err
}

// decodeClick decodes and completes a click of the input stream: the user defaults to
// the record's key, the time to the record's event time.
func decodeClick(rec partition.Record) (builtin.Click, error) {
	var c builtin.Click
	if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadClick, err)
	}
	if c.Page == "" || len(c.Page) > builtin.MaxPageBytes {
		return c, fmt.Errorf("%w: page of %d bytes, want 1..%d", ErrBadClick, len(c.Page), builtin.MaxPageBytes)
	}
	if c.User == "" {
		c.User = string(rec.Key)
	}
	if c.Time == 0 {
		c.Time = rec.EventTime
	}
	return c, nil
}
