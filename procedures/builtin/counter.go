package builtin

// CounterAddArgs are the arguments of counter.add.
type CounterAddArgs struct {
	// Delta is added to the counter; it may be negative. A sum that overflows an int64
	// fails the call and leaves the counter as it was.
	Delta int64 `msgpack:"d"`
}
