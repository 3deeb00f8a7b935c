#!/usr/bin/env bash
# check-arm64.sh BINARY: runs a linux/arm64 gregor under qemu-user on this
# (amd64) machine, as make check-arm64 does: a broker on loopback with a
# temporary data dir, a topic created, records produced and consumed with
# the binary's own CLI (every command under qemu), the broker stopped with
# SIGTERM and required to exit 0, and its data dir reopened by a second
# start that must find the records again. qemu-user-static is installed
# with apt-get when there is no qemu-aarch64 (as root or through
# passwordless sudo). Prints the time each step took.
set -euo pipefail

bin=${1:?usage: check-arm64.sh path/to/gregor-linux-arm64}
[ -x "$bin" ] || { echo "check-arm64: $bin is not an executable" >&2; exit 1; }
now() { echo "${EPOCHREALTIME/./}"; } # microseconds
since() { local us=$(($(now) - $1)); printf '%d.%02ds' $((us / 1000000)) $((us % 1000000 / 10000)); }
start=$(now)

qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [ -z "$qemu" ]; then
	if [ "$(id -u)" = 0 ]; then sudo=""
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"
	else echo "check-arm64: no qemu-aarch64; install qemu-user-static as root (apt-get install -y qemu-user-static)" >&2; exit 1; fi
	command -v apt-get >/dev/null 2>&1 || { echo "check-arm64: no qemu-aarch64 and no apt-get to install it with" >&2; exit 1; }
	echo "check-arm64: installing qemu-user-static with ${sudo:+sudo }apt-get"
	t=$(now)
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
	qemu=$(command -v qemu-aarch64-static) || { echo "check-arm64: qemu-aarch64-static still missing after installing qemu-user-static" >&2; exit 1; }
	echo "check-arm64: qemu installed in $(since "$t")"
fi
gregor() { "$qemu" "$bin" "$@"; }

case "$(file -b "$bin" 2>/dev/null || echo unknown)" in
*aarch64*|unknown) ;;
*) echo "check-arm64: $bin is not an arm64 binary: $(file -b "$bin")" >&2; exit 1 ;;
esac

tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "check-arm64: $(gregor version) (under $("$qemu" --version | head -1))"

# serve starts the broker in the background on a free loopback port and
# waits for its msg=listening line; sets pid and addr.
serve() {
	local log=$1 t
	t=$(now)
	"$qemu" "$bin" serve --listen 127.0.0.1:0 --data-dir "$tmp/data" 2>"$log" &
	pid=$!
	addr=""
	for _ in $(seq 600); do
		addr=$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$log" | head -1)
		[ -n "$addr" ] && break
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "check-arm64: the broker exited before listening" >&2; exit 1; }
		sleep 0.1
	done
	[ -n "$addr" ] || { cat "$log" >&2; echo "check-arm64: no msg=listening within 60 s" >&2; exit 1; }
	echo "check-arm64: broker listening on $addr after $(since "$t")"
}

# stop sends SIGTERM and requires exit status 0 within 60 s.
stop() {
	local t rc=0
	t=$(now)
	kill -TERM "$pid"
	for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then echo "check-arm64: broker still running 60 s after SIGTERM" >&2; exit 1; fi
	wait "$pid" || rc=$?
	[ "$rc" = 0 ] || { cat "$1" >&2; echo "check-arm64: broker exited with status $rc" >&2; exit 1; }
	pid=""
	echo "check-arm64: broker stopped cleanly after $(since "$t")"
}

serve "$tmp/serve1.log"
t=$(now)
gregor topics create arm64-check --partitions 2 --brokers "$addr" >/dev/null
want=$(printf 'k%d=record %d from arm64\n' $(for i in $(seq 10); do echo "$i $i"; done))
printf '%s\n' "$want" | gregor produce arm64-check --key-separator = --brokers "$addr"
got=$(gregor consume arm64-check --from-beginning -n 10 --format '%k=%v\n' --brokers "$addr" | sort -V)
[ "$got" = "$(printf '%s\n' "$want" | sort -V)" ] || {
	echo "check-arm64: consumed records differ from those produced" >&2
	diff <(printf '%s\n' "$want" | sort -V) <(printf '%s\n' "$got") >&2 || true; exit 1; }
echo "check-arm64: 10 records produced and consumed back in $(since "$t")"
stop "$tmp/serve1.log"

# The data dir written under qemu reopens (clean shutdown, same records).
serve "$tmp/serve2.log"
got=$(gregor consume arm64-check --from-beginning -n 10 --format '%k=%v\n' --brokers "$addr" | sort -V)
[ "$got" = "$(printf '%s\n' "$want" | sort -V)" ] || { echo "check-arm64: records lost across a restart" >&2; exit 1; }
echo "check-arm64: after a restart the 10 records are still there"
stop "$tmp/serve2.log"
echo "check-arm64: ok in $(since "$start")"
