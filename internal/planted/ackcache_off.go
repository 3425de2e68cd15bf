//go:build !jepsen_ackcache

package planted

// AckCache is false: the planted bug that caches results past a session's ack point is built only with -tags jepsen_ackcache.
const AckCache = false
