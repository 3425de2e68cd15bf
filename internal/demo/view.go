package demo

import (
	"context"
	"fmt"
	"sync"

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
	err                        error
	cancel                     context.CancelFunc
	done                       chan struct{}
}

// watchWindowResults starts following stream until stop.
func watchWindowResults(ctx context.Context, cl *client.Client, stream string) *resultView {
	ctx, cancel := context.WithCancel(ctx)
	v := &resultView{latest: map[clickWindowKey]builtin.PageCount{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		v.follow(ctx, cl, stream)
	}()
	return v
}

// viewCounts are the results the view received so far: each window's revisions 0, 1, …
// (revisions counts those after 0), its last one Final once it closed.
type viewCounts struct {
	records, finals, revisions, open int
}

// counts returns what the view received so far; open counts the windows that fired but
// are not final yet.
func (v *resultView) counts() viewCounts {
	v.mu.Lock()
	defer v.mu.Unlock()
	return viewCounts{records: v.records, finals: v.finals, revisions: v.revisions, open: len(v.latest) - v.finals}
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
