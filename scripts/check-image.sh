#!/usr/bin/env bash
# check-image.sh DIR: runs the linux/amd64 gregor that scripts/ociimage
# check extracted from the OCI image into DIR (DIR/gregor, DIR/entrypoint
# and DIR/env, one item a line), as make check-image does, with no
# container runtime: the image's entrypoint with the image's environment,
# except that --listen becomes 127.0.0.1:0, --data-dir a temporary
# directory, GREGOR_HTTP 127.0.0.1:0 and GREGOR_ADVERTISE empty (so the
# bound address is advertised). Then the image's healthcheck
# (gregor healthcheck) against the admin listener, a topic created and
# records produced and consumed with the binary's own CLI, and SIGTERM,
# after which the broker must exit 0. Prints the time each step took.
set -euo pipefail

dir=${1:?usage: check-image.sh DIR (written by ociimage check --extract DIR)}
bin=$dir/gregor
[ -x "$bin" ] || { echo "check-image: $bin is not an executable" >&2; exit 1; }
now() { echo "${EPOCHREALTIME/./}"; } # microseconds
since() { local us=$(($(now) - $1)); printf '%d.%02ds' $((us / 1000000)) $((us % 1000000 / 10000)); }
start=$(now)

tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# The entrypoint, with the image's /gregor replaced by the extracted binary
# and the container addresses and data dir by loopback and $tmp/data.
mapfile -t ep <"$dir/entrypoint"
[ "${ep[0]}" = /gregor ] || { echo "check-image: entrypoint starts with ${ep[0]}, not /gregor" >&2; exit 1; }
args=("$bin")
for ((i = 1; i < ${#ep[@]}; i++)); do
	case ${ep[i]} in
	--listen) args+=(--listen 127.0.0.1:0); i=$((i + 1)) ;;
	--data-dir) args+=(--data-dir "$tmp/data"); i=$((i + 1)) ;;
	*) args+=("${ep[i]}") ;;
	esac
done
mapfile -t envs <"$dir/env"
runenv=()
for e in "${envs[@]}"; do
	case $e in
	GREGOR_HTTP=*) runenv+=(GREGOR_HTTP=127.0.0.1:0) ;;
	GREGOR_ADVERTISE=*) runenv+=(GREGOR_ADVERTISE=) ;;
	*) runenv+=("$e") ;;
	esac
done
echo "check-image: $("$bin" version)"
echo "check-image: env -i ${runenv[*]} ${args[*]}"

log=$tmp/serve.log
t=$(now)
env -i "${runenv[@]}" "${args[@]}" 2>"$log" &
pid=$!
addr="" http=""
for _ in $(seq 300); do
	addr=$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$log" | head -1)
	http=$(sed -n 's/.*msg="admin http listening" addr=\([0-9.:]*\).*/\1/p' "$log" | head -1)
	[ -n "$addr" ] && [ -n "$http" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "check-image: the broker exited before listening" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] && [ -n "$http" ] || { cat "$log" >&2; echo "check-image: no listening lines (broker and admin) within 30 s" >&2; exit 1; }
echo "check-image: broker on $addr, admin on $http after $(since "$t")"

t=$(now)
for _ in $(seq 100); do
	env -i GREGOR_HTTP="$http" "$bin" healthcheck >/dev/null 2>&1 && break
	sleep 0.1
done
env -i GREGOR_HTTP="$http" "$bin" healthcheck >/dev/null || { echo "check-image: gregor healthcheck failed" >&2; exit 1; }
echo "check-image: healthcheck (the image's HEALTHCHECK) passed after $(since "$t")"

t=$(now)
"$bin" topics create image-check --partitions 2 --brokers "$addr" >/dev/null
want=$(printf 'k%d=record %d from the image\n' $(for i in $(seq 10); do echo "$i $i"; done))
printf '%s\n' "$want" | "$bin" produce image-check --key-separator = --brokers "$addr"
got=$(timeout 30 "$bin" consume image-check --from-beginning -n 10 --format '%k=%v\n' --brokers "$addr" | sort -V)
[ "$got" = "$(printf '%s\n' "$want" | sort -V)" ] || {
	echo "check-image: consumed records differ from those produced" >&2
	diff <(printf '%s\n' "$want" | sort -V) <(printf '%s\n' "$got") >&2 || true; exit 1; }
echo "check-image: 10 records produced and consumed back in $(since "$t")"

t=$(now)
rc=0
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "check-image: broker still running 30 s after SIGTERM" >&2; exit 1; fi
wait "$pid" || rc=$?
[ "$rc" = 0 ] || { cat "$log" >&2; echo "check-image: broker exited with status $rc" >&2; exit 1; }
pid=""
echo "check-image: broker stopped cleanly after $(since "$t")"
echo "check-image: ok in $(since "$start")"
