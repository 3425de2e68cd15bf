// Command customproc shows Lockstep as a library: a Go program that runs nodes with its
// own procedure registered next to the built-ins, and calls it through the client.
//
// Every node of a cluster must register the same procedures; a node whose procedure set
// differs is refused when it joins, and refuses to apply a cluster's log if started on it.
//
// As "customproc node ..." it is a node binary of its own: one node, run exactly as
// "lockstep node" runs one (the same flags and --config file, SIGHUP reloads the
// certificates, a divergent replica is rebuilt automatically), with the custom procedures
// (package node/runner; docs/procedures.md, "Embedding: your own node binary"):
//
//	customproc node --certs-dir certs --id n1 --data /tmp/c1 --bootstrap n1=127.0.0.1:7001=127.0.0.1:8001
//
// Otherwise it runs a demo: three nodes in this process, a few calls of its procedure.
//
//	go run ./examples/customproc
//
// With -serve it keeps its three nodes running until SIGINT or SIGTERM, after printing
// their client addresses ("addrs A,B,C"), so that the lockstep CLI can call the custom
// procedure it does not know, through the nodes' procedure catalogue:
//
//	go run ./examples/customproc -serve
//	lockstep procedures --addr A
//	lockstep invoke words.count --key doc-1 --args '{"Line": "to be or not to be"}' --addr A
//
// It also runs a stream processor, "lines.window", over stream "lines":
//
//	lockstep stream create lines --addr A
//	lockstep invoke stream.append --key doc-1 --args '{"Stream": "lines", "Record": "aGk="}' --addr A
//	lockstep processors --addr A
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// WordCountArgs are the arguments of "words.count": a line of text.
type WordCountArgs struct {
	Line string `msgpack:"line"`
}

// countWords adds each word of a line to a per-word counter in the partition of the
// document key, and returns how many distinct words the document has seen. It is
// deterministic: it iterates the words in order and reads only through tx.
func countWords(tx *partition.Tx, args WordCountArgs) (int64, error) {
	var buf [8]byte
	for _, w := range strings.Fields(strings.ToLower(args.Line)) {
		key := append(append([]byte(nil), tx.Key()...), "/"+w...)
		var n uint64
		if v, ok := tx.Get("words", key); ok {
			n = binary.BigEndian.Uint64(v)
		}
		binary.BigEndian.PutUint64(buf[:], n+1)
		if err := tx.Put("words", key, buf[:]); err != nil {
			return 0, err
		}
	}
	var distinct int64
	prefix := append(append([]byte(nil), tx.Key()...), '/')
	end := append(append([]byte(nil), tx.Key()...), '/'+1)
	err := tx.Scan("words", partition.ScanOptions{Start: prefix, End: end}, func(_, _ []byte) bool {
		distinct++
		return true
	})
	return distinct, err
}

// linesPer10s counts the records of each key in 10-second tumbling windows of event
// time, writing each window's count to table "lines.per-10s" under key/start. Its state
// is in the tables "lines.per-10s.*" of each partition (package window).
func linesPer10s() *window.Aggregate[struct{}, int64] {
	op, err := window.New(window.Config[struct{}, int64]{
		Name:     "lines.per-10s",
		Assigner: window.Tumbling{Size: 10_000},
		Init:     func() int64 { return 0 },
		Add:      func(n int64, _ struct{}) int64 { return n + 1 },
		Emit: func(tx *partition.Tx, r window.Result[int64]) error {
			key := binary.BigEndian.AppendUint64(append(append([]byte(nil), r.Key...), '/'), uint64(r.Start))
			return tx.Put("lines.per-10s", key, binary.BigEndian.AppendUint64(nil, uint64(r.Value)))
		},
	})
	if err != nil {
		panic(err)
	}
	return op
}

func registry() *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegister(r, "words.count", countWords,
		procedures.Doc("key: document id; args: {line}; adds the line's words to the document's counts; returns its distinct words"))
	// A stream processor: every record appended to stream "lines" (created with
	// "lockstep stream create lines") is counted in its key's 10-second window. It
	// declares its window operator, so "lockstep processors" shows its watermark.
	op := linesPer10s()
	procedures.MustRegisterProcessor(r, "lines.window", "lines", func(tx *partition.Tx, rec partition.Record) error {
		return op.Process(tx, rec.Key, rec.EventTime, struct{}{})
	}, procedures.OnTick(op.Advance), procedures.WindowOperators("lines.per-10s"),
		procedures.ProcessorDoc("counts the records of stream lines per key in 10-second event-time windows"))
	return r
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "node" {
		// One node of a cluster, with every feature of `lockstep node`.
		runner.Main(func(nodeID string) *procedures.Registry { return registry() })
		return
	}
	demo()
}

// demo runs three nodes in this process and calls words.count on them (or with -serve
// keeps them running for the lockstep CLI).
func demo() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %[1]s [flags]: three nodes in this process, a demo\n"+
			"   or: %[1]s node [flags]: one node of a cluster, as lockstep node runs one (%[1]s node --help)\n", filepath.Base(os.Args[0]))
		flag.PrintDefaults()
	}
	serve := flag.Bool("serve", false, "keep the nodes running until SIGINT or SIGTERM and print their client addresses")
	dir := flag.String("dir", "", "the nodes' data directories go here (default: a temp dir, removed at exit)")
	certsDir := flag.String("certs-dir", os.Getenv("LOCKSTEP_CERTS_DIR"),
		"the nodes' certificates (ca.crt, node.crt, client.root.crt; see lockstep cert); default $LOCKSTEP_CERTS_DIR, else a throw-away CA")
	flag.Parse()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cluster, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{
		Nodes:    3,
		Dir:      *dir,
		Node:     node.Config{Logger: quiet, CertsDir: *certsDir},
		Registry: func(int) *procedures.Registry { return registry() },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	if *serve {
		fmt.Printf("addrs %s\n", strings.Join(cluster.ClientAddrs(), ","))
		<-sig
		return
	}
	c, err := client.Dial(ctx, cluster.ClientConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, line := range []string{"the quick brown fox", "jumps over the lazy dog", "The End"} {
		// The result type is named, the argument type inferred from WordCountArgs.
		distinct, err := client.InvokeAs[int64](ctx, c, "words.count", []byte("doc-1"), WordCountArgs{Line: line})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-25q -> %d distinct words so far\n", line, distinct)
	}
	hashes, err := cluster.WaitConverged(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("all %d replicas hold the same state: %x\n", len(cluster.Nodes), hashes)
}
