package sql_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// TestVersion1PlansUnchanged: a deployment that uses nothing of plan version 2 is still
// written as version 1, byte for byte as before version 2 existed (the hashes were taken
// from the binary without it), so binaries that know only version 1 keep running it.
func TestVersion1PlansUnchanged(t *testing.T) {
	for i, tt := range []struct{ script, sha string }{
		{clicksScript, "c0a26de1667566fc0fabaffe72155827933dc07d53c2e55549ebe1de2ae6b7e2"},
		{joinScript, "c4b765e1c355190858779a9b84d779163f5dc42fb01848f9bd7288cdb363e070"},
	} {
		art, err := sql.Compile(tt.script, sql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := art.Encode()
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if art.Plan.Version != 1 || hex.EncodeToString(sum[:]) != tt.sha {
			t.Errorf("#%d: version %d, sha256 %x, want version 1, %s", i, art.Plan.Version, sum, tt.sha)
		}
		if _, err := sql.Load(art.SQL, b); err != nil {
			t.Errorf("#%d: load: %v", i, err)
		}
	}
}

// TestVersion2Constructs: map-layout streams and stream–stream joins make a version 2
// plan; a version 1 plan that holds them is refused (ErrBadPlan), and so is any version
// past the newest (ErrVersion).
func TestVersion2Constructs(t *testing.T) {
	for i, script := range []string{
		fmt.Sprintf(nexmarkStreams, "0 seconds"),
		`CREATE STREAM a (k text, ts timestamp) WITH (key = 'k', event_time = 'ts');
CREATE STREAM b (k text, ts timestamp) WITH (key = 'k', event_time = 'ts');
CREATE MATERIALIZED VIEW v AS SELECT a.k FROM a JOIN b ON a.k = b.k;`,
	} {
		art, err := sql.Compile(script, sql.Options{PlanVersion: 5}) // 6: joins' side tables
		if err != nil {
			t.Fatal(err)
		}
		if art.Plan.Version != 2 {
			t.Errorf("#%d: version %d, want 2", i, art.Plan.Version)
		}
		p := *art.Plan
		p.Version = 1
		if err := p.Validate(); !errors.Is(err, plan.ErrBadPlan) {
			t.Errorf("#%d: as version 1: got %v, want ErrBadPlan", i, err)
		}
		p.Version = plan.Version + 1
		b, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plan.Decode(b); !errors.Is(err, plan.ErrVersion) {
			t.Errorf("#%d: as version %d: got %v, want ErrVersion", i, p.Version, err)
		}
	}
}
