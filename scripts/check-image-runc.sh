#!/usr/bin/env bash
# check-image-runc.sh OCI-DIR REF GREGOR: runs the linux/amd64 image of the
# OCI layout OCI-DIR (tag REF, as make image writes it) under runc, the
# OCI reference runtime: skopeo picks the amd64 manifest, umoci unpacks it
# into a runtime bundle with the image's own config (entrypoint, user
# 65532, environment, working directory), and runc runs it. Needs root and
# skopeo, umoci and runc (apt-get install skopeo umoci runc).
#
# The bundle's config is changed only where a container on a laptop would
# be run differently: the host's network namespace instead of a new one
# (this machine has no bridge; a port mapping does the same), the broker on
# 127.0.0.1:19092 and the console on 127.0.0.1:19644 (loopback only), that
# address advertised, and the image's /data volume bind-mounted from a host
# directory owned by 65532 (umoci makes a VOLUME a root-owned tmpfs; Docker
# and Podman copy the image directory's owner into a new volume).
#
# Then, with GREGOR (a gregor binary of this machine) as the client: the
# console's /metrics names gregor_build_info, a topic is created and a
# record produced and consumed; the container is killed with SIGKILL and
# run again on the same volume, and the record is read back; SIGTERM must
# end it with exit status 0.
set -euo pipefail

oci=${1:?usage: check-image-runc.sh OCI-DIR REF GREGOR}
ref=${2:?usage: check-image-runc.sh OCI-DIR REF GREGOR}
cli=${3:?usage: check-image-runc.sh OCI-DIR REF GREGOR}
for tool in skopeo umoci runc python3 curl; do
	command -v "$tool" >/dev/null || { echo "check-image-runc: $tool is not installed (apt-get install skopeo umoci runc)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "check-image-runc: runc needs root" >&2; exit 1; }

tmp=$(mktemp -d)
id=gregor-check-$$
cleanup() {
	runc kill "$id" KILL 2>/dev/null || true
	runc delete -f "$id" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

skopeo copy -q --override-arch amd64 --override-os linux "oci:$oci:$ref" "oci:$tmp/img:gregor"
umoci unpack --image "$tmp/img:gregor" "$tmp/bundle" >/dev/null
mkdir "$tmp/data"
chown 65532:65532 "$tmp/data"
python3 - "$tmp/bundle/config.json" "$tmp/data" <<'EOF'
import json, sys
path, data = sys.argv[1], sys.argv[2]
c = json.load(open(path))
p = c["process"]
assert p["args"][0] == "/gregor", p["args"]
assert p["user"]["uid"] == 65532, p["user"]
args = []
it = iter(p["args"])
for a in it:
    if a == "--listen":
        next(it)
        args += ["--listen", "127.0.0.1:19092"]
    else:
        args.append(a)
p["args"], p["terminal"] = args, False
p["env"] = [e for e in p["env"] if not e.startswith(("GREGOR_HTTP=", "GREGOR_ADVERTISE="))]
p["env"] += ["GREGOR_HTTP=127.0.0.1:19644", "GREGOR_ADVERTISE=127.0.0.1:19092"]
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]
vols = [m for m in c["mounts"] if m["destination"] == "/data"]
assert vols, "the image declares no /data volume"
for m in vols:
    m.update({"type": "bind", "source": data, "options": ["rbind", "rw"]})
json.dump(c, open(path, "w"))
EOF

run() { # starts the container in the background; its output in $tmp/run-$1.log
	(cd "$tmp/bundle" && exec runc run "$id" >"$tmp/run-$1.log" 2>&1) &
	runpid=$!
	for _ in $(seq 200); do
		grep -q 'msg=listening' "$tmp/run-$1.log" 2>/dev/null && return 0
		kill -0 "$runpid" 2>/dev/null || break
		sleep 0.05
	done
	echo "check-image-runc: run $1 did not listen:" >&2
	cat "$tmp/run-$1.log" >&2
	exit 1
}

run 1
metrics=$(curl -fsS 127.0.0.1:19644/metrics)
grep -q '^gregor_build_info{' <<<"$metrics" || { echo "check-image-runc: no gregor_build_info on /metrics" >&2; exit 1; }
"$cli" topics create runc-check --brokers 127.0.0.1:19092 >/dev/null
echo "in a container" | "$cli" produce runc-check --brokers 127.0.0.1:19092
got=$(timeout 30 "$cli" consume runc-check --brokers 127.0.0.1:19092 --from-beginning -n 1)
[ "$got" = "in a container" ] || { echo "check-image-runc: consumed '$got'" >&2; exit 1; }

runc kill "$id" KILL
wait "$runpid" || true
runc delete -f "$id" 2>/dev/null || true
run 2
got=$(timeout 30 "$cli" consume runc-check --brokers 127.0.0.1:19092 --from-beginning -n 1)
[ "$got" = "in a container" ] || { echo "check-image-runc: after kill -9 and a new run, consumed '$got'" >&2; exit 1; }
runc kill "$id" TERM
rc=0
wait "$runpid" || rc=$?
[ "$rc" = 0 ] || { echo "check-image-runc: exit status $rc after SIGTERM" >&2; tail -5 "$tmp/run-2.log" >&2; exit 1; }
grep -q 'msg=stopped' "$tmp/run-2.log" || { echo "check-image-runc: no msg=stopped after SIGTERM" >&2; exit 1; }
echo "check-image-runc: $oci:$ref ran under $(runc --version | head -1): user 65532, produce/consume, kill -9 and a new run on the same volume, SIGTERM exit 0"
