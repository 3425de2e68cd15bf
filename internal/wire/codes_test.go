package wire

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestCodeCatalogueIsAppendOnly pins every (code, name) pair. The catalogue is
// append-only: never edit or delete a row here; a new code adds a row at the end.
func TestCodeCatalogueIsAppendOnly(t *testing.T) {
	pinned := []struct {
		code Code
		num  uint16
		name string
	}{
		{CodeOK, 0, "OK"},
		{CodeNotLeader, 1, "NotLeader"},
		{CodeUnknownProcedure, 2, "UnknownProcedure"},
		{CodeBadArguments, 3, "BadArguments"},
		{CodeProcedureError, 4, "ProcedureError"},
		{CodeOverloaded, 5, "Overloaded"},
		{CodeSessionExpired, 6, "SessionExpired"},
		{CodeDivergent, 7, "Divergent"},
		{CodeTimeout, 8, "Timeout"},
		{CodeMalformed, 9, "Malformed"},
		{CodeProtocolVersion, 10, "ProtocolVersion"},
		{CodeClusterMismatch, 11, "ClusterMismatch"},
		{CodeUnknownOutcome, 12, "UnknownOutcome"},
		{CodeInternal, 13, "Internal"},
		{CodeTooLarge, 14, "TooLarge"},
		{CodeShuttingDown, 15, "ShuttingDown"},
		{CodeNotReady, 16, "NotReady"},
		{CodeBadScope, 17, "BadScope"},
		{CodeUnknownSession, 18, "UnknownSession"},
		{CodeUnknownStream, 19, "UnknownStream"},
		{CodeStreamExists, 20, "StreamExists"},
		{CodeOffsetTrimmed, 21, "OffsetTrimmed"},
		{CodeOffsetPastEnd, 22, "OffsetPastEnd"},
		{CodePermissionDenied, 23, "PermissionDenied"},
		{CodeUnknownGroup, 24, "UnknownGroup"},
		{CodeNotGroupMember, 25, "NotGroupMember"},
		{CodeStaleGeneration, 26, "StaleGeneration"},
		{CodeNotAssigned, 27, "NotAssigned"},
		{CodeUnknownUser, 28, "UnknownUser"},
		{CodeLimitExceeded, 29, "LimitExceeded"},
	}
	for i, p := range pinned {
		if uint16(p.code) != p.num {
			t.Errorf("#%d: got code %d, want %d", i, uint16(p.code), p.num)
		}
		if got := p.code.String(); got != p.name {
			t.Errorf("#%d: got name %q, want %q", i, got, p.name)
		}
	}
	if int(lastCode) != len(pinned)-1 {
		t.Errorf("got lastCode %d, want %d: pin every new code in this table", lastCode, len(pinned)-1)
	}
	if got, want := (lastCode + 1).String(), fmt.Sprintf("Code(%d)", lastCode+1); got != want {
		t.Errorf("got %q, want %q: a code past lastCode has a name", got, want)
	}
}

func TestCodeNamesAndTextsUnique(t *testing.T) {
	names := map[string]Code{}
	texts := map[string]Code{}
	for c := CodeOK; c <= lastCode; c++ {
		name, text, ok := c.describe()
		if !ok || name == "" || text == "" {
			t.Errorf("#%d: code has no name or text", c)
		}
		if prev, dup := names[name]; dup {
			t.Errorf("#%d: got name %q, want unique (also code %d)", c, name, prev)
		}
		if prev, dup := texts[text]; dup {
			t.Errorf("#%d: got text %q, want unique (also code %d)", c, text, prev)
		}
		names[name], texts[text] = c, c
	}
}

func sentinels() []error {
	return []error{nil, ErrNotLeader, ErrUnknownProcedure, ErrBadArguments, ErrProcedureError,
		ErrOverloaded, ErrSessionExpired, ErrDivergent, ErrTimeout, ErrMalformed,
		ErrProtocolVersion, ErrClusterMismatch, ErrUnknownOutcome, ErrInternal, ErrTooLarge,
		ErrShuttingDown, ErrNotReady, ErrBadScope, ErrUnknownSession, ErrUnknownStream, ErrStreamExists,
		ErrOffsetTrimmed, ErrOffsetPastEnd, ErrPermissionDenied,
		ErrUnknownGroup, ErrNotGroupMember, ErrStaleGeneration, ErrNotAssigned, ErrUnknownUser, ErrLimitExceeded}
}

// TestSentinelPerCode checks that sentinel i has code i and that a decoded *Error matches
// its own sentinel and no other.
func TestSentinelPerCode(t *testing.T) {
	all := sentinels()
	if len(all) != int(lastCode)+1 {
		t.Fatalf("got %d sentinels, want %d: add the new code's sentinel", len(all)-1, lastCode)
	}
	for i := 1; i < len(all); i++ {
		if got := CodeOf(all[i]); got != Code(i) {
			t.Errorf("#%d: got code %v, want %v", i, got, Code(i))
		}
		resp := Response{ID: 1, Code: Code(i), Message: "m"}
		err := resp.Err()
		for j := 1; j < len(all); j++ {
			if got, want := errors.Is(err, all[j]), i == j; got != want {
				t.Errorf("#%d: errors.Is(%v, %v): got %v, want %v", i, err, all[j], got, want)
			}
		}
		var we *Error
		if !errors.As(err, &we) || we.Code != Code(i) {
			t.Errorf("#%d: got %#v, want *Error with code %v", i, err, Code(i))
		}
	}
}

func TestResponseErrOK(t *testing.T) {
	r := Response{ID: 1, Message: "ignored"}
	if err := r.Err(); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func TestErrorResponse(t *testing.T) {
	var decodeErr error
	{
		var r Request
		decodeErr = DecodeRequest([]byte{0x91}, &r)
	}
	tests := []struct {
		err        error
		code       Code
		msg        string
		leader     string
		matchesErr error
	}{
		{nil, CodeOK, "", "", nil},
		{ErrNotLeader, CodeNotLeader, "not leader", "", ErrNotLeader},
		{fmt.Errorf("sequencer: queue full: %w", ErrOverloaded), CodeOverloaded, "sequencer: queue full: overloaded", "", ErrOverloaded},
		{&Error{Code: CodeNotLeader, Message: "lost leadership", Leader: "n2:7400"}, CodeNotLeader, "lost leadership", "n2:7400", ErrNotLeader},
		{fmt.Errorf("forward: %w", &Error{Code: CodeNotLeader, Leader: "n3:7400"}), CodeNotLeader, "forward: not leader (leader n3:7400)", "n3:7400", ErrNotLeader},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", ErrSessionExpired)), CodeSessionExpired, "a: b: session expired", "", ErrSessionExpired},
		{errors.New("boom"), CodeInternal, "boom", "", ErrInternal},
		{context.DeadlineExceeded, CodeInternal, "context deadline exceeded", "", ErrInternal},
		{&Error{Code: CodeOK, Message: "bogus"}, CodeInternal, "ok: bogus", "", ErrInternal},
		{fmt.Errorf("%w: 5000000 bytes", ErrFrameTooLarge), CodeTooLarge, "wire: frame too large: 5000000 bytes", "", ErrTooLarge},
		{ErrEmptyFrame, CodeMalformed, "wire: empty frame", "", ErrMalformed},
		{decodeErr, CodeMalformed, decodeErr.Error(), "", ErrMalformed},
	}
	for i, tt := range tests {
		got := ErrorResponse(7, tt.err)
		want := Response{ID: 7, Code: tt.code, Message: tt.msg, Leader: tt.leader}
		if got.ID != want.ID || got.Code != want.Code || got.Message != want.Message || got.Leader != want.Leader {
			t.Errorf("#%d: got %+v, want %+v", i, got, want)
		}
		// The client side sees the same code through the wire.
		var back Response
		if err := DecodeResponse(AppendResponse(nil, &got), &back); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if tt.matchesErr != nil && !errors.Is(back.Err(), tt.matchesErr) {
			t.Errorf("#%d: got %v, want an error matching %v", i, back.Err(), tt.matchesErr)
		}
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Code: CodeNotLeader}, "not leader"},
		{&Error{Code: CodeNotLeader, Message: "not leader"}, "not leader"},
		{&Error{Code: CodeNotLeader, Message: "deposed", Leader: "n1:7400"}, "not leader: deposed (leader n1:7400)"},
		{&Error{Code: Code(400), Message: "from the future"}, "error code 400: from the future"},
	}
	for i, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

func TestOpString(t *testing.T) {
	tests := []struct {
		op   Op
		want string
	}{
		{OpInvoke, "Invoke"}, {OpOpenSession, "OpenSession"}, {OpCloseSession, "CloseSession"},
		{OpStatus, "Status"}, {OpStreamRead, "StreamRead"}, {OpPing, "Ping"}, {OpJoin, "Join"},
		{OpRemove, "Remove"}, {OpTransferLeader, "TransferLeader"}, {OpProcedures, "Procedures"},
		{OpProcessors, "Processors"}, {OpSubscribe, "Subscribe"}, {OpCredit, "Credit"},
		{OpUnsubscribe, "Unsubscribe"}, {OpUsers, "Users"}, {OpConfirmLeader, "ConfirmLeader"}, {OpReadIndex, "ReadIndex"},
		{OpRebuild, "Rebuild"}, {OpClusterConfig, "ClusterConfig"}, {OpBackup, "Backup"}, {OpSQL, "SQL"}, {Op(0), "Op(0)"}, {Op(22), "Op(22)"},
	}
	for i, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
	pinned := []struct {
		op  Op
		num uint8
	}{{OpInvoke, 1}, {OpOpenSession, 2}, {OpCloseSession, 3}, {OpStatus, 4}, {OpStreamRead, 5}, {OpPing, 6},
		{OpJoin, 7}, {OpRemove, 8}, {OpTransferLeader, 9}, {OpProcedures, 10}, {OpProcessors, 11},
		{OpSubscribe, 12}, {OpCredit, 13}, {OpUnsubscribe, 14}, {OpUsers, 15}, {OpConfirmLeader, 16}, {OpReadIndex, 17},
		{OpRebuild, 18}, {OpClusterConfig, 19}, {OpBackup, 20}}
	for i, p := range pinned {
		if uint8(p.op) != p.num {
			t.Errorf("#%d: got %d, want %d", i, uint8(p.op), p.num)
		}
	}
}
