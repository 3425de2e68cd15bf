// Package packaging holds the tests of the deployment files: the Dockerfile, the compose
// file of a three-node secure cluster (deploy/compose.yaml), the systemd unit
// (deploy/lockstep.service with deploy/node.yaml) and the Kubernetes StatefulSet
// (deploy/kubernetes/). Nothing here needs Docker, systemd or a Kubernetes cluster, or the
// network; each test checks a file against the real lockstep binary instead:
//
//  1. every lockstep command a file runs uses only flags that command's --help lists, and
//     every `lockstep node` command passes --check-config (flags, config file, addresses);
//  2. the paths agree across files: the binary's path, the data volume, the certificates'
//     directory, the ports the probes call and the ports the node listens on;
//  3. the compose file's certificate step runs (with its paths moved into a temp dir) and
//     leaves each node a certificate for the name it advertises, and runs again without
//     changing anything;
//  4. the Kubernetes manifests decode strictly (unknown fields are errors) into the API
//     types of k8s.io/api, and their probes, ports and mounts refer to what exists;
//  5. `lockstep --version` and the lockstep_build_info metric of a running node agree, and
//     the node's probe port answers without a client certificate.
//
// The package has no code besides this comment.
package packaging
