package demo

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// resultView is the pipeline demo's live view of the window results: it subscribes to
// every partition of the results stream and keeps each window's latest result.
type resultView struct {
	mu                         sync.Mutex
	latest                     map[clickWindowKey]builtin.PageCount
	records, finals, revisions int
	lastFinal                  clickWindowKey
	err                        error
	cancel                     context.CancelFunc
	done                       chan struct{}
}

// watchWindowResults starts following stream and prints a line a second with the clicks
// acknowledged (acked) and the results that arrived.
func watchWindowResults(ctx context.Context, cl *client.Client, stream string, out io.Writer, acked func() int64) (*resultView, error) {
	ctx, cancel := context.WithCancel(ctx)
	v := &resultView{latest: map[clickWindowKey]builtin.PageCount{}, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		v.follow(ctx, cl, stream)
	}()
	go func() {
		defer wg.Done()
		v.print(ctx, out, acked)
	}()
	go func() {
		wg.Wait()
		close(v.done)
	}()
	return v, nil
}

func (v *resultView) stop() {
	v.cancel()
	<-v.done
}

// follow receives the results as they are applied, pushed by a subscription to every
// partition (in offset order per partition), which moves to another replica when the one
// serving it is killed.
func (v *resultView) follow(ctx context.Context, cl *client.Client, stream string) {
	sub, err := cl.SubscribeAll(ctx, stream, nil)
	if err != nil {
		v.fail(fmt.Errorf("subscribe to %s: %w", stream, err))
		return
	}
	defer sub.Close()
	for {
		recs, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				v.fail(fmt.Errorf("subscription to %s: %w", stream, err))
			}
			return
		}
		if err := v.take(recs); err != nil {
			v.fail(err)
			return
		}
	}
}

func (v *resultView) take(recs []client.Record) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range recs {
		var pc builtin.PageCount
		if err := msgpack.Unmarshal(r.Data, &pc); err != nil {
			return fmt.Errorf("window result at offset %d: %w", r.Offset, err)
		}
		k := clickWindowKey{pc.Page, pc.Start}
		if prev, ok := v.latest[k]; (ok && (prev.Final || pc.Revision != prev.Revision+1)) || (!ok && pc.Revision != 0) {
			return fmt.Errorf("window %s [%d, %d): result %+v after %+v", pc.Page, pc.Start, pc.End, pc, prev)
		}
		v.latest[k] = pc
		v.records++
		if pc.Revision > 0 {
			v.revisions++
		}
		if pc.Final {
			v.finals++
			v.lastFinal = k
		}
	}
	return nil
}

func (v *resultView) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err == nil {
		v.err = err
	}
}

// print writes a live line every second until ctx ends.
func (v *resultView) print(ctx context.Context, out io.Writer, acked func() int64) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := acked(), time.Now()
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-tick.C:
		}
		n := acked()
		rate := float64(n-last) / now.Sub(lastAt).Seconds()
		last, lastAt = n, now
		v.mu.Lock()
		line := fmt.Sprintf("%7.0f clicks/s | window results: %d received, %d final, %d revisions", rate, v.records, v.finals, v.revisions)
		if v.finals > 0 {
			k := v.lastFinal
			line += fmt.Sprintf("; latest final: %s in [%s, +1m) = %d clicks", k.page,
				time.UnixMilli(k.start).UTC().Format("15:04:05"), v.latest[k].Count)
		}
		v.mu.Unlock()
		fmt.Fprintln(out, line)
	}
}

// snapshot returns the latest result of every window and the view's error, if any.
func (v *resultView) snapshot() (map[clickWindowKey]builtin.PageCount, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := make(map[clickWindowKey]builtin.PageCount, len(v.latest))
	for k, pc := range v.latest {
		m[k] = pc
	}
	return m, v.err
}
