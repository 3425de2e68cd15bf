package certs

// LoopbackHosts are the hosts of the node certificate CreateLoopback makes.
var LoopbackHosts = []string{"127.0.0.1", "::1", "localhost"}

// CreateLoopback writes a throw-away CA into dir, a node certificate for the loopback
// hosts and a certificate for each client name: the certificates of a cluster that runs
// on one machine (node.LocalCluster, the demo, tests). Existing files are replaced.
func CreateLoopback(dir string, clients ...string) error {
	o := Options{Overwrite: true}
	if err := CreateCA(dir, o); err != nil {
		return err
	}
	if err := CreateNode(dir, LoopbackHosts, o); err != nil {
		return err
	}
	for _, c := range clients {
		if err := CreateClient(dir, c, o); err != nil {
			return err
		}
	}
	return nil
}
