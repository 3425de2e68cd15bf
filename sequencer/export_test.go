package sequencer

// NewTestLogger gives the external test package (sequencer_test) the logger into t.Log.
var NewTestLogger = testLogger
