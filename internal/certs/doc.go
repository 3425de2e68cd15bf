// Package certs creates, lists and loads the certificates of a Lockstep cluster, the way
// CockroachDB's `cockroach cert` does, with crypto/x509 and nothing else.
//
// A certificates directory holds:
//
//	ca.crt, ca.key               the cluster's certificate authority (keep ca.key offline)
//	node.crt, node.key           a node's certificate: common name "node", the node's hosts
//	                             as subject alternative names, usable for server and client
//	                             authentication (nodes dial each other with it)
//	client.NAME.crt, .key        a client's certificate: common name NAME, client auth only
//
// Its duties:
//
//  1. Create: CreateCA, CreateNode and CreateClient write ECDSA P-256 keys (mode 0600) and
//     certificates signed by the directory's CA. They never overwrite a file unless asked.
//  2. List: List describes every certificate of a directory, with its validity.
//  3. Load: LoadNode and LoadClient read a key pair and the CA, and check what TLS would
//     only find out at a peer: the key matches the certificate, the certificate is signed by
//     the CA, it is valid now (ErrExpired, ErrNotYetValid) and of the right kind.
//  4. Serve: a Store holds a loaded Bundle behind an atomic pointer and hands out TLS 1.3
//     configurations that read it at every handshake, so Reload (on SIGHUP) takes effect
//     for new connections without a restart. PeerOf names the verified peer of a
//     connection: its common name and whether it holds a node or a client certificate.
//
// Usage:
//
//	certs.CreateCA(dir, certs.Options{})
//	certs.CreateNode(dir, []string{"10.0.0.1", "db1.example"}, certs.Options{})
//	certs.CreateClient(dir, "root", certs.Options{})
//	st, err := certs.NewNodeStore(dir)
//	ln = tls.NewListener(ln, st.ServerConfig(certs.KindClient)) // nodes and clients
//
// Contract: the package reads and writes files only in the directory it is given, and
// accepts only certificates that chain to that directory's ca.crt. It does not check
// revocation; rotation is by renewal (see docs/security.md).
package certs
