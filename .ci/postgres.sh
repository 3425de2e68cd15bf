# Sourced by .ci/run: installs PostgreSQL from Debian's packages, starts a private cluster
# on 127.0.0.1 as the postgres user, creates the lockstep user and database, and exports
# LOCKSTEP_TEST_PG_DSN for the sink tests (internal/testutil/pgtest), which then fail
# rather than skip if it cannot be reached. The cluster stops when the shell exits.
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q postgresql
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
PGPORT=${LOCKSTEP_CI_PG_PORT:-54329}
PGDIR=$(mktemp -d /tmp/lockstep-ci-pg.XXXXXX)
chown postgres:postgres "$PGDIR"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/postgres.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDIR -c max_connections=100" start
stop_postgres() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast stop >/dev/null || true
  rm -rf "$PGDIR"
}
trap stop_postgres EXIT
runuser -u postgres -- "$PGBIN/psql" -h "$PGDIR" -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 -q \
  -c "CREATE USER lockstep PASSWORD 'lockstep'" -c "CREATE DATABASE lockstep OWNER lockstep"
export LOCKSTEP_TEST_PG_DSN="postgres://lockstep:lockstep@127.0.0.1:$PGPORT/lockstep?sslmode=disable"
export CI=1
echo "PostgreSQL $("$PGBIN/postgres" --version) on 127.0.0.1:$PGPORT, LOCKSTEP_TEST_PG_DSN set"
