// Command modbench-node is `lockstep node` with the Go side of the modbench benchmark
// compiled in (package benchmarks/modbench): the same runner.Command, the same built-ins,
// plus the processor "modbench.count" and the procedure "modbench.total". It is built by
// benchmarks/modbench.sh for the benchmark's Go runs, so that the product binary carries
// no benchmark code. A cluster it bootstraps runs the processor from its first entry
// (cluster version 3 activates every processor the bootstrapping binary carries).
//
//	modbench-node node --certs-dir certs --id n1 --data d1 --bootstrap n1=127.0.0.1:7001=127.0.0.1:8001
package main

import (
	"github.com/lockstepdb/lockstep/benchmarks/modbench"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/lockstepdb/lockstep/procedures"
)

func main() {
	runner.Main(func(string) *procedures.Registry {
		reg := procedures.Builtins()
		if err := modbench.RegisterGo(reg); err != nil {
			panic("modbench: " + err.Error()) // a registration bug of this program, not input
		}
		return reg
	})
}
