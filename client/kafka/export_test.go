package kafka

// Test hooks: the kill and pause points of a worker.

// SetAfterAppend sets the hook run after each batch's exactly-once step returned.
func SetAfterAppend(c *SourceConfig, fn func(partition int32, next int64)) { c.afterAppend = fn }

// SetBeforeAppend sets the hook run before each batch is invoked.
func SetBeforeAppend(c *SourceConfig, fn func(partition int32)) { c.beforeAppend = fn }

// SetAfterCommit sets the hook run after each sink transaction committed.
func SetAfterCommit(c *SinkConfig, fn func(partition int, next uint64)) { c.afterCommit = fn }

// SetBeforeCommit sets the hook run before each sink transaction ends.
func SetBeforeCommit(c *SinkConfig, fn func(partition int)) { c.beforeCommit = fn }

// SetAfterInit sets the hook run after a sink partition's producer took its
// transactional id, before it reads the progress.
func SetAfterInit(c *SinkConfig, fn func(partition int)) { c.afterInit = fn }
