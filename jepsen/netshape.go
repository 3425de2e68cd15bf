package jepsen

// Network shapes: the directed links each cutting fault of the nemesis cuts, as a pure
// function of the step, so every backend makes the same shape and a test can apply each
// one to a backend and check what passes (TestIPTablesShapes).

// shapeCuts returns the directed links (endpoints: nodes 0..n-1, then clients n...) that
// fault cuts among n nodes and clients client endpoints; target is the fault's node
// (perm[0], or the leader for the leader faults). ok is false for a fault that is no cut.
// FaultExpireSessions's first phase is FaultLostReplies's shape; its second cuts every
// client from every node (allClientsCut).
func shapeCuts(fault string, perm []int, target, n, clients int) (cuts [][2]int, ok bool) {
	both := func(a, b int) { cuts = append(cuts, [2]int{a, b}, [2]int{b, a}) }
	switch fault {
	case FaultIsolate, FaultIsolateLeader:
		return partitionCuts([][]int{{target}, others(n, target)}), true
	case FaultHalves:
		return partitionCuts([][]int{perm[:n/2], perm[n/2:]}), true
	case FaultBridge:
		k := (n - 1) / 2
		return partitionCuts([][]int{perm[:k], perm[n-k:]}), true
	case FaultOneWay:
		for _, j := range others(n, target) {
			cuts = append(cuts, [2]int{target, j})
		}
		return cuts, true
	case FaultRing:
		return ringCuts(perm), true
	case FaultClientsCut:
		for w := range clients {
			for _, j := range perm[:n/2] {
				both(n+w, j)
			}
		}
		return cuts, true
	case FaultIsolateLeaderClients:
		rest := others(n, target)
		cuts = partitionCuts([][]int{{target}, rest})
		for w := range clients {
			away := rest // even workers stay with the old leader
			if w%2 == 1 {
				away = []int{target}
			}
			for _, j := range away {
				both(n+w, j)
			}
		}
		return cuts, true
	case FaultLostReplies, FaultExpireSessions:
		for w := range clients {
			cuts = append(cuts, [2]int{target, n + w})
		}
		return cuts, true
	}
	return nil, false
}

// allClientsCut returns every link between a client and a node, both ways.
func allClientsCut(n, clients int) [][2]int {
	var cuts [][2]int
	for w := range clients {
		for j := range n {
			cuts = append(cuts, [2]int{n + w, j}, [2]int{j, n + w})
		}
	}
	return cuts
}
