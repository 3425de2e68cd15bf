// Package pgtest gives tests a PostgreSQL database to write to: the one CI provides, or a
// server the test starts itself in a temporary directory.
//
// Duties:
//  1. With LOCKSTEP_TEST_PG_DSN set (CI sets it), use that server; a failure to reach it
//     fails the test.
//  2. Otherwise start a private server (initdb + postgres on 127.0.0.1 and a free port,
//     as the postgres or nobody user when running as root), stopped when the test ends.
//  3. Skip the test with a clear message only when no server can be started and neither
//     LOCKSTEP_TEST_PG_DSN nor CI is set: in CI a missing PostgreSQL is a failure.
//
// Each call of New gives the test its own schema, so tests sharing a server do not see
// each other's tables:
//
//	db := pgtest.New(t)
//	db.Exec(t, `CREATE TABLE events (...)`)
//	... connect with db.DSN ...
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the DSN of a server to use (a database
// the user may create schemas in).
const EnvDSN = "LOCKSTEP_TEST_PG_DSN"

// startTimeout bounds starting a private server.
const startTimeout = 60 * time.Second

// DB is one test's database: a schema of its own on a server.
type DB struct {
	// DSN connects to the server with the test's schema first on the search_path.
	DSN string
	// Schema is the test's schema.
	Schema string
}

// New returns a database for t: a fresh schema on the CI server or on a private server
// started for t. It skips t only when no server can be had outside CI.
func New(t testing.TB) *DB {
	t.Helper()
	base := os.Getenv(EnvDSN)
	if base == "" {
		var err error
		base, err = startServer(t)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("pgtest: CI is set but %s is not, and no PostgreSQL could be started: %v", EnvDSN, err)
			}
			t.Skipf("pgtest: no PostgreSQL: set %s, or install PostgreSQL (initdb, postgres): %v", EnvDSN, err)
		}
	}
	schema := fmt.Sprintf("t_%d_%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", redact(base), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, base); err == nil {
			conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			conn.Close(ctx)
		}
	})
	return &DB{DSN: withSearchPath(base, schema), Schema: schema}
}

// Exec runs sql in the test's schema, failing t on an error.
func (db *DB) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Connect opens a connection to the test's schema, closed when the test ends.
func (db *DB) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// withSearchPath returns dsn (URL or key=value form) with search_path set to schema.
func withSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// redact hides a password in a URL DSN.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return "the DSN"
}

// binDirs are where initdb and postgres are looked for, after PATH.
var binDirs = []string{"/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/14/bin"}

// findBin returns the directory holding both initdb and postgres.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		p, _ = filepath.EvalSymlinks(p)
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	for _, d := range binDirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb not found on PATH nor under /usr/lib/postgresql/*/bin")
}

// startServer starts a private server for t and returns its DSN.
func startServer(t testing.TB) (string, error) {
	bin, err := findBin()
	if err != nil {
		return "", err
	}
	cred, owner, err := runAs()
	if err != nil {
		return "", err
	}
	// Not t.TempDir: its parents are private to this user, and the server may run as another.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb as %s: %w: %s", owner, err, out)
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "max_connections=50")
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		logf.Close()
		return "", err
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	})
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return dsn, nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("postgres exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("postgres not accepting connections after %v: %v\n%s", startTimeout, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runAs returns the credential to run the server with: none for a non-root user, the
// postgres (or else nobody) user for root, which PostgreSQL refuses to run as.
func runAs() (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "this user", nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, name, nil
	}
	return nil, "", errors.New("running as root and no postgres or nobody user to run PostgreSQL as")
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Quote returns a SQL string literal for s, for DDL in tests.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
