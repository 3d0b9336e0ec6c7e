#!/usr/bin/env bash
# A throwaway PostgreSQL server for the test suite (README "PostgreSQL"; ADR 0028).
#
#   scripts/pg-throwaway.sh start DIR     initialise (once) and start a cluster under DIR, print
#                                         `export ...` lines with the connection settings
#   scripts/pg-throwaway.sh stop DIR      stop it by its pid (immediate; the data is throwaway)
#   scripts/pg-throwaway.sh run DIR -- CMD...
#                                         start, run CMD with the settings exported, stop by
#                                         pid also when CMD fails or is interrupted (trap),
#                                         and exit with CMD's status
#
# The server listens on 127.0.0.1 only, on a free port, with password (scram) authentication.
# As root it runs as the unprivileged user $MAKA_PG_USER (default maka_pg, created if missing):
# PostgreSQL refuses to run as root. Binaries are taken from PATH (initdb, pg_ctl, postgres).
set -euo pipefail

PG_OS_USER="${MAKA_PG_USER:-maka_pg}"
DB_USER="maka"
DB_NAME="maka_es_test"

die() { echo "pg-throwaway: $*" >&2; exit 2; }

as_owner() {
    # Run a PostgreSQL binary as the cluster owner (the unprivileged user when we are root).
    if [ "$(id -u)" = "0" ]; then
        runuser -u "$PG_OS_USER" -- "$@"
    else
        "$@"
    fi
}

ensure_os_user() {
    [ "$(id -u)" = "0" ] || return 0
    id -u "$PG_OS_USER" >/dev/null 2>&1 && return 0
    useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_OS_USER"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

settings_of() {
    local dir="$1" port password
    port="$(cat "$dir/port")"
    password="$(cat "$dir/password")"
    cat <<EOF
export POSTGRES_HOST=127.0.0.1
export POSTGRES_PORT=$port
export POSTGRES_USER=$DB_USER
export POSTGRES_PASSWORD=$password
export POSTGRES_DBNAME=$DB_NAME
export MAKA_ES_TEST_PG_URL=postgresql://$DB_USER:$password@127.0.0.1:$port/$DB_NAME
EOF
}

start() {
    local dir="$1"
    command -v initdb >/dev/null && command -v pg_ctl >/dev/null \
        || die "initdb/pg_ctl not on PATH (Debian: apt-get install -y postgresql)"
    ensure_os_user
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [ "$(id -u)" = "0" ]; then chown "$PG_OS_USER" "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        python3 -c 'import secrets; print(secrets.token_hex(16))' > "$dir/password"
        chmod 600 "$dir/password"
        [ "$(id -u)" = "0" ] && chown "$PG_OS_USER" "$dir/password"
        as_owner initdb --pgdata="$dir/data" --username="$DB_USER" --pwfile="$dir/password" \
            --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --no-locale \
            >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    fi
    stop "$dir"  # a server left over from an interrupted run
    free_port > "$dir/port"
    local port; port="$(cat "$dir/port")"
    # fsync and synchronous_commit stay on (the durability the store promises is tested).
    as_owner pg_ctl --pgdata="$dir/data" --log="$dir/server.log" --wait --timeout=60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir/data \
            -c max_connections=300 -c shared_buffers=32MB" start >/dev/null \
        || { tail -n 30 "$dir/server.log" >&2; die "server did not start"; }
    as_owner psql -h "$dir/data" -p "$port" -U "$DB_USER" -d postgres -qAt \
        -c "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'" | grep -q 1 \
        || as_owner psql -h "$dir/data" -p "$port" -U "$DB_USER" -d postgres -q \
            -c "CREATE DATABASE $DB_NAME" >/dev/null
    settings_of "$dir"
}

stop() {
    local dir="$1" pid
    [ -f "$dir/data/postmaster.pid" ] || return 0
    pid="$(head -n 1 "$dir/data/postmaster.pid")"
    # SIGQUIT = immediate shutdown of that one server (its pid, never a name).
    kill -QUIT "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop DIR | run DIR -- CMD..."
case "$cmd" in
    start) start "$dir" ;;
    stop) stop "$dir" ;;
    run)
        shift 2
        [ "${1:-}" = "--" ] && shift
        [ "$#" -gt 0 ] || die "run: no command"
        trap 'stop "$dir"' EXIT
        trap 'exit 130' INT TERM
        eval "$(start "$dir")"
        echo "pg-throwaway: PostgreSQL on 127.0.0.1:$POSTGRES_PORT (cluster $dir)" >&2
        set +e
        "$@"
        status=$?
        set -e
        exit "$status"
        ;;
    *) die "unknown command $cmd" ;;
esac
