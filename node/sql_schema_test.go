package node

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// TestShowSchema: SHOW SCHEMA answers the deployed schema of a stream and of a view, as
// the replicas run it (the plan's schema, byte for byte what the compiler made), to a
// reader too (a sink needs no more); a name that no SQL module defines is refused.
func TestShowSchema(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := c.dial(ctx)
	for _, s := range []string{sqlEvents, sqlWindows} {
		if _, err := cl.SQL().Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	rcl := c.dialAs(ctx, cl, "other", client.RoleReader)
	art, err := sql.Compile(sqlEvents+"\n"+sqlWindows, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name, kind, key, eventTime, module string
	}{
		{"ev", "stream", "k", "ts", "ev"},
		{"tw", "view", "", "", "tw"},
	} {
		got, err := rcl.SQL().Schema(ctx, tc.name)
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if got.Name != tc.name || got.Kind != tc.kind || got.Key != tc.key || got.EventTime != tc.eventTime || got.Module != tc.module {
			t.Errorf("#%d: got %+v, want %+v", i, got, tc)
		}
		var s plan.Schema
		if err := msgpack.Unmarshal(got.Encoded, &s); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		var want plan.Schema
		for _, w := range art.Schemas() {
			if w.Name == tc.name {
				want = w
				want.Offer = nil // compiler-side only (msgpack:"-"): the log does not carry it
			}
		}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("#%d: schema %+v, want %+v", i, s, want)
		}
	}
	for i, name := range []string{"nosuch", "ev.dead"} {
		_, err := rcl.SQL().Schema(ctx, name)
		var se *client.SQLError
		if !errors.As(err, &se) || !errors.Is(err, client.ErrBadArguments) {
			t.Errorf("#%d: SHOW SCHEMA %s: got %v, want an *SQLError matching ErrBadArguments", i, name, err)
		}
	}
}
