package main

import (
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
	"github.com/lockstepdb/lockstep/internal/recordjson"
	"github.com/lockstepdb/lockstep/internal/restartplan"
)

// The types of the commands' JSON output, which the tests decode it into, under the
// names the tests know them by; the library packages that print them define them.
type (
	clusterStatusJSON = clusterstatus.Report
	nodeRow           = clusterstatus.Row
	recordJSON        = recordjson.Record
	procedureJSON     = cliout.ProcedureJSON
	certJSON          = cliout.CertJSON
	restartPlanJSON   = restartplan.PlanJSON
)
