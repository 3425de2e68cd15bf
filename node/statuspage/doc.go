/*
Package statuspage renders a node's status page: a small HTML page, served on the admin
port, with the cluster's members (roles, terms, applied indexes, lag, readiness), each
partition's state hash on every member, this node's processors (position, lag,
watermarks) and its recent fault events. It refreshes itself (a meta refresh) and needs no
external assets: the style is inline, there is no script.

# Duties

 1. Hold the page's data (Page): plain values the node fills from its status, the
    cluster status and its event ring, so the page depends on nothing of the node.
 2. Render it (Render) with html/template, which escapes every value: node ids, error
    texts and event messages come from the network.

# Usage

	p := statuspage.Page{NodeID: "n1", RefreshSeconds: 2, ...}
	err := statuspage.Render(w, p)

# Contract

Render writes the whole page or returns the template's error; it keeps no state and is
safe for concurrent use.
*/
package statuspage
