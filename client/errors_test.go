package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// sentinelOf is, for every code of the wire catalogue but OK, the client's sentinel.
var sentinelOf = map[wire.Code]error{
	wire.CodeNotLeader:        ErrNotLeader,
	wire.CodeUnknownProcedure: ErrUnknownProcedure,
	wire.CodeBadArguments:     ErrBadArguments,
	wire.CodeProcedureError:   ErrProcedure,
	wire.CodeOverloaded:       ErrOverloaded,
	wire.CodeSessionExpired:   ErrSessionExpired,
	wire.CodeDivergent:        ErrDivergent,
	wire.CodeTimeout:          ErrTimeout,
	wire.CodeMalformed:        ErrMalformed,
	wire.CodeProtocolVersion:  ErrProtocolVersion,
	wire.CodeClusterMismatch:  ErrClusterMismatch,
	wire.CodeUnknownOutcome:   ErrUnknownOutcome,
	wire.CodeInternal:         ErrInternal,
	wire.CodeTooLarge:         ErrTooLarge,
	wire.CodeShuttingDown:     ErrShuttingDown,
	wire.CodeNotReady:         ErrNotReady,
	wire.CodeBadScope:         ErrBadScope,
	wire.CodeUnknownSession:   ErrUnknownSession,
	wire.CodeUnknownStream:    ErrUnknownStream,
	wire.CodeStreamExists:     ErrStreamExists,
	wire.CodeOffsetTrimmed:    ErrOffsetTrimmed,
	wire.CodeOffsetPastEnd:    ErrOffsetPastEnd,
	wire.CodeUnknownGroup:     ErrUnknownGroup,
	wire.CodeNotGroupMember:   ErrNotGroupMember,
	wire.CodeStaleGeneration:  ErrStaleGeneration,
	wire.CodeNotAssigned:      ErrNotAssigned,
	wire.CodePermissionDenied: ErrPermissionDenied,
	wire.CodeUnknownUser:      ErrUnknownUser,
	wire.CodeLimitExceeded:    ErrLimitExceeded,
}

// catalogue returns every code of the wire catalogue but OK: the codes from 1 on whose
// names the catalogue knows (it may hold numbers reserved for codes not named yet).
func catalogue(t *testing.T) []wire.Code {
	var out []wire.Code
	for c := wire.Code(1); c < 256; c++ {
		if !strings.HasPrefix(c.String(), "Code(") {
			out = append(out, c)
		}
	}
	if len(out) < 18 {
		t.Fatalf("the catalogue has %d codes besides OK, want at least 18", len(out))
	}
	return out
}

// TestErrorsCoverTheCatalogue checks, for every code of the wire catalogue, that a node's
// answer with that code reaches the caller as a *Error of this package with the code, the
// node's message and leader, matching the client's sentinel of the code and no other,
// and with no error of package wire left in it. Status makes one attempt and returns
// every code as it is.
func TestErrorsCoverTheCatalogue(t *testing.T) {
	codes := catalogue(t)
	var asked atomic.Int64
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		// The i-th status request is answered with the i-th code.
		code := codes[int(asked.Add(1)-1)%len(codes)]
		fc.reply(wire.Response{ID: req.ID, Code: code, Message: "scripted " + code.String(), Leader: "leader:1"})
	})
	c, err := Open(testConfig(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, code := range codes {
		sentinel, ok := sentinelOf[code]
		if !ok {
			t.Errorf("%v: the test has no client sentinel for it", code)
		}
		_, err := c.Status(ctx, n.addr)
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != Code(code) || ce.Message != "scripted "+code.String() || ce.Leader != "leader:1" {
			t.Errorf("%v: got %#v, want a *client.Error with the code, message and leader", code, err)
			continue
		}
		if ce.Code.String() != code.String() {
			t.Errorf("%v: Code.String() = %q", code, ce.Code)
		}
		if !errors.Is(err, sentinel) {
			t.Errorf("%v: %v does not match %v", code, err, sentinel)
		}
		for other, s := range sentinelOf {
			if other != code && errors.Is(err, s) {
				t.Errorf("%v: %v matches the sentinel of %v too", code, err, other)
			}
		}
		if hasWireErr(err) {
			t.Errorf("%v: %v still holds a wire error", code, err)
		}
		want := fmt.Sprintf("client: status of %s: %v", n.addr, &wire.Error{Code: code, Message: ce.Message, Leader: ce.Leader})
		if err.Error() != want {
			t.Errorf("%v: text %q, want %q", code, err, want)
		}
	}
	if len(sentinelOf) != len(codes) {
		t.Errorf("the test knows %d codes, the catalogue %d", len(sentinelOf), len(codes))
	}
}

// TestStatusErrorIsClientError checks the same through Status itself, and Invoke's
// definite answers, for a code each.
func TestStatusErrorIsClientError(t *testing.T) {
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeNotReady, Message: "catching up"})
		default:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeProcedureError, Message: "no funds"})
		}
	})
	c := dial(t, testConfig(t, n.addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Status(ctx, n.addr)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodeNotReady || !errors.Is(err, ErrNotReady) || hasWireErr(err) {
		t.Errorf("Status: got %#v, want a *client.Error matching ErrNotReady", err)
	}
	_, err = c.CounterAdd(ctx, "k", 1)
	if !errors.As(err, &ce) || ce.Code != CodeProcedureError || ce.Message != "no funds" || !errors.Is(err, ErrProcedure) || hasWireErr(err) {
		t.Errorf("Invoke: got %#v, want a *client.Error matching ErrProcedure", err)
	}
}

// TestPublicErr checks the translation of error trees: wire errors anywhere are replaced,
// everything else is kept, and the text does not change.
func TestPublicErr(t *testing.T) {
	base := errors.New("base")
	tests := []struct {
		name string
		err  error
		is   []error // the translated error matches each
	}{
		{"nil", nil, nil},
		{"no wire error", fmt.Errorf("x: %w", base), []error{base}},
		{"sentinel", wire.ErrNotReady, []error{ErrNotReady}},
		{"wrapped sentinel", fmt.Errorf("x: %w: %w", base, wire.ErrClusterMismatch), []error{base, ErrClusterMismatch}},
		{"frame too large", fmt.Errorf("send: %w", wire.ErrFrameTooLarge), []error{ErrTooLarge}},
		{"speaks HTTP", fmt.Errorf("%w: handshake: %w", errUnreachable, fmt.Errorf("wire: handshake: %w", wire.ErrSpeaksHTTP)),
			[]error{ErrUnreachable, ErrSpeaksHTTP, ErrProtocolVersion}},
		{"context and error", fmt.Errorf("%w: %w", context.DeadlineExceeded, &wire.Error{Code: wire.CodeClusterMismatch, Message: "m"}),
			[]error{context.DeadlineExceeded, ErrClusterMismatch, &Error{Code: CodeClusterMismatch}}},
		{"internal", fmt.Errorf("x: %w", &wire.Error{Code: wire.CodeInternal}), []error{ErrInternal}},
	}
	for _, tt := range tests {
		got := publicErr(tt.err)
		if (got == nil) != (tt.err == nil) || (got != nil && got.Error() != tt.err.Error()) {
			t.Errorf("%s: got %v, want the text of %v", tt.name, got, tt.err)
			continue
		}
		if got != nil && hasWireErr(got) {
			t.Errorf("%s: %v still holds a wire error", tt.name, got)
		}
		for _, want := range tt.is {
			if !errors.Is(got, want) {
				t.Errorf("%s: %v does not match %v", tt.name, got, want)
			}
		}
	}
	if ErrSpeaksHTTP.Error() != wire.ErrSpeaksHTTP.Error() || !errors.Is(ErrSpeaksHTTP, ErrProtocolVersion) {
		t.Errorf("ErrSpeaksHTTP = %v", ErrSpeaksHTTP)
	}
}
