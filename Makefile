# Gregor: a Kafka-compatible broker.
GO        ?= go
RACE      ?=
FUZZTIME  ?= 10s
DATA_DIR  ?= ./data
CLUSTER_DATA_DIR ?= ./data-cluster
LISTEN    ?= 127.0.0.1:9092
TESTFLAGS ?=
# VERSION is stamped into every binary the Makefile builds (gregor version).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# PLATFORMS: what make cross and make dist build, as GOOS/GOARCH.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64
# LINT_CROSS: the platforms make lint (so CI) cross-builds cmd/gregor for.
LINT_CROSS ?= linux/arm64 darwin/arm64 darwin/amd64 windows/amd64
# CYCLONEDX: the SBOM generator make dist runs (go run, nothing to install).
CYCLONEDX ?= github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

RACEFLAG := $(if $(RACE),-race,)
LDFLAGS  := -X main.buildVersion=$(VERSION)
# Release builds (make dist): no cgo, no local paths, no symbol tables.
RELEASE_BUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)"

.PHONY: compat-tls cross cross-vet dist image check-image check-image-runc check-arm64 test-stress race screenshot conformance registry-conformance bench-kafka bench-cluster bench-scale bench-link bench-registry cluster build run deps test unit compat compat-cluster compat-java compat-java-streams-chaos compat-python crash link-kill jepsen jepsen-scale fuzz bench lint clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/gregor ./cmd/gregor

## cross: cmd/gregor for each of $(PLATFORMS) (CGO_ENABLED=0), into
## bin/cross/gregor-OS-ARCH[.exe]; make lint runs it, so CI catches a
## Linux-only call outside a _linux.go file. Without dist's -trimpath, so
## that its cache is reused by check-arm64 and cross-vet: with a cold build
## cache about a minute a platform on two cores (5.6 min for all five), a
## few seconds for all five with a warm one.
cross:
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "cross: $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o bin/cross/gregor-$$os-$$arch$$ext ./cmd/gregor; \
	done

## cross-vet: go vet ./... (tests included) for each of $(PLATFORMS): what
## make cross checks, for every package and test file. Not in CI: with a
## cold cache it compiles every test dependency once per platform.
cross-vet:
	@set -e; for p in $(PLATFORMS); do \
		echo "cross-vet: $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done

## dist: release archives in dist/ (removed first), for each of $(PLATFORMS):
## gregor-$(VERSION)-OS-ARCH.tar.gz (.zip for windows) holding the binary,
## README.md and LICENSE (when there is one); beside each its CycloneDX SBOM,
## gregor-$(VERSION)-OS-ARCH.cdx.json (cyclonedx-gomod bin: the modules
## linked into that binary); and SHA256SUMS of them all (sha256sum -c
## SHA256SUMS checks them). Files carry the last commit's time, so the same
## commit gives the same archives.
dist:
	@command -v zip >/dev/null || { echo "make dist: zip is needed for the Windows archive (apt-get install zip)" >&2; exit 1; }
	@set -e; rm -rf dist; mkdir -p dist; \
	when=$$(git log -1 --format=%ct 2>/dev/null || date +%s); \
	for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		name=gregor-$(VERSION)-$$os-$$arch; \
		echo "dist: $$name"; \
		mkdir -p dist/$$name; \
		GOOS=$$os GOARCH=$$arch $(RELEASE_BUILD) -o dist/$$name/gregor$$ext ./cmd/gregor; \
		cp README.md dist/$$name/; \
		if [ -f LICENSE ]; then cp LICENSE dist/$$name/; fi; \
		$(GO) run $(CYCLONEDX) bin -json -version $(VERSION) -output dist/$$name.cdx.json dist/$$name/gregor$$ext; \
		find dist/$$name -exec touch -h -d @$$when {} +; \
		if [ $$os = windows ]; then \
			(cd dist && TZ=UTC zip -qrX $$name.zip $$name); \
		else \
			tar -C dist --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$$when -cf - $$name | gzip -n9 > dist/$$name.tar.gz; \
		fi; \
		rm -rf dist/$$name; \
	done; \
	cd dist && sha256sum gregor-* > SHA256SUMS; \
	echo "dist: $$(ls | wc -l) files in dist/"; ls -l

## image: an OCI image of cmd/gregor for $(IMAGE_PLATFORMS), built with no
## container daemon (scripts/ociimage, go-containerregistry, its own module):
## an image index of one image per platform, each the static release binary
## (as make dist builds it) on an empty base, run as 65532:65532 with the
## entrypoint gregor serve --listen 0.0.0.0:9092 --data-dir /data
## (a volume), GREGOR_HTTP=0.0.0.0:9644, GREGOR_ADVERTISE=:9092 (the
## container's host name) and org.opencontainers.image.* labels. Written as
## the OCI layout $(IMAGE_DIR)/ and the same as a tar, $(IMAGE_DIR).tar
## (docker load, podman load); the last commit's time is every timestamp,
## so the same commit gives the same digests (and tar). make dist removes
## dist/. About 45 s with a cold build cache on two cores, 13 s warm.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_DIR       ?= dist/gregor-$(VERSION)-oci
IMAGE_SOURCE    ?= https://github.com/gregor-broker/gregor
image:
	@set -e; rm -rf bin/image $(IMAGE_DIR) $(IMAGE_DIR).tar; mkdir -p bin/image dist; \
	when=$$(git log -1 --format=%ct 2>/dev/null || date +%s); \
	rev=$$(git rev-parse HEAD 2>/dev/null || echo unknown); bins=""; \
	for p in $(IMAGE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "image: $$os/$$arch"; \
		GOOS=$$os GOARCH=$$arch $(RELEASE_BUILD) -o bin/image/gregor-$$os-$$arch ./cmd/gregor; \
		bins="$$bins $$p=$(CURDIR)/bin/image/gregor-$$os-$$arch"; \
	done; \
	(cd scripts/ociimage && $(GO) run . build --out $(CURDIR)/$(IMAGE_DIR) --version $(VERSION) \
		--revision $$rev --source $(IMAGE_SOURCE) --created $$when $$bins); \
	tar -C $(IMAGE_DIR) --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$$when \
		-cf $(IMAGE_DIR).tar oci-layout index.json blobs; \
	ls -l $(IMAGE_DIR).tar

## check-image: the image checked with no container runtime (make image
## first when $(IMAGE_DIR) is missing): scripts/ociimage check reads the OCI
## layout back, validates every blob's digest, requires both platforms and
## each config (entrypoint, env, user, volume, ports, healthcheck, labels)
## and layer (/gregor a static binary of the right machine,
## /data owned by 65532) to be as built, and extracts the
## linux/amd64 binary; scripts/check-image.sh runs it as the entrypoint
## would, on loopback with a temporary data dir, runs its healthcheck,
## produces and consumes records with its CLI and stops it with SIGTERM.
## About 3 s once the image is built; not in make test.
check-image:
	@[ -f $(IMAGE_DIR)/index.json ] || $(MAKE) image
	rm -rf bin/image/check
	cd scripts/ociimage && $(GO) run . check --dir $(CURDIR)/$(IMAGE_DIR) --version $(VERSION) \
		--platforms "$$(echo $(IMAGE_PLATFORMS) | tr ' ' ,)" --extract $(CURDIR)/bin/image/check
	./scripts/check-image.sh bin/image/check

## check-image-runc: the amd64 image run by runc, the OCI runtime, as root
## (skopeo, umoci and runc installed with apt-get when missing): user 65532,
## produce and consume, kill -9 and a new run on the same /data volume,
## SIGTERM exit 0 (scripts/check-image-runc.sh says what it changes).
check-image-runc: build
	@[ -f $(IMAGE_DIR)/index.json ] || $(MAKE) image
	@for t in skopeo umoci runc; do command -v $$t >/dev/null || { apt-get update -qq && apt-get install -y -qq skopeo umoci runc >/dev/null; break; }; done
	./scripts/check-image-runc.sh $(IMAGE_DIR) $(VERSION) bin/gregor

## check-arm64: the linux/arm64 binary (built as make cross builds it) run
## under qemu-user, which is installed with apt-get when there is no
## qemu-aarch64: a broker on loopback with a temporary data dir, records
## produced and consumed with its own CLI, a restart, a clean stop
## (scripts/check-arm64.sh); then the protocol and storage unit tests built
## for arm64 and run under qemu too (less the crash tests that re-exec
## their own binary, which needs binfmt_misc); then a short compat subset
## (kcat, sarama, franz-go: produce and consume, groups, transactions,
## idempotence across a restart) against the arm64 broker under qemu
## (GREGOR_BIN, a wrapper that runs it with qemu-aarch64). About 90 s once
## built; not in make test.
ARM64_SKIP := TestCleaner_KilledDuringSwap|TestLog_Kill9KeepsAcknowledged
ARM64_COMPAT := TestKcat_|TestSarama_AdminProduceConsume|TestFranzGo_ProduceConsume|TestTxn_SaramaCommitAbort|TestTxn_KcatReadCommitted|TestIdempotent_StateSurvivesRestart|TestGroups_FranzGoThreeMembers|TestGroups_SaramaConsumerGroup
check-arm64: deps
	$(MAKE) cross PLATFORMS=linux/arm64
	./scripts/check-arm64.sh bin/cross/gregor-linux-arm64
	@set -e; qemu=$$(command -v qemu-aarch64-static || command -v qemu-aarch64); \
	for pkg in protocol storage; do \
		CGO_ENABLED=0 GOARCH=arm64 $(GO) test -c -o bin/cross/$$pkg-arm64.test ./$$pkg; \
		echo "check-arm64: go test ./$$pkg under qemu"; \
		(cd $$pkg && $$qemu ../bin/cross/$$pkg-arm64.test -test.count=1 -test.skip '$(ARM64_SKIP)'); \
	done; \
	printf '#!/bin/sh\nexec %s %s "$$@"\n' "$$qemu" "$(CURDIR)/bin/cross/gregor-linux-arm64" > bin/cross/gregor-arm64-qemu; \
	chmod +x bin/cross/gregor-arm64-qemu; \
	echo "check-arm64: a compat subset against the arm64 broker under qemu"; \
	GREGOR_BIN=$(CURDIR)/bin/cross/gregor-arm64-qemu $(GO) test -count=1 -timeout 10m -run '$(ARM64_COMPAT)' ./compat

## run: the broker on $(LISTEN) with data in $(DATA_DIR)
run: build
	./bin/gregor --listen $(LISTEN) --data-dir $(DATA_DIR)

## cluster: a local three-node cluster on 127.0.0.1:9092-9094 (etcd peers on
## 9192-9194), data under $(CLUSTER_DATA_DIR)/node-N (apart from make run's
## $(DATA_DIR)); Ctrl-C stops all three.
cluster: build
	@V=1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194; \
	trap 'kill $$(jobs -p) 2>/dev/null; wait' INT TERM EXIT; \
	for n in 1 2 3; do \
		./bin/gregor --listen 127.0.0.1:909$$((n+1)) --data-dir $(CLUSTER_DATA_DIR)/node-$$n \
			--http 127.0.0.1:964$$((n+3)) \
			--set node.id=$$n --set controller.quorum.voters=$$V \
			--set default.replication.factor=3 --set min.insync.replicas=2 & \
	done; wait

## screenshot: docs/img/console.png, docs/img/console-group.png and
## docs/img/console-schemas.png, the console at 1280x800 in headless
## Chromium over scripted scenes (two topics, a group that falls behind, 30
## history samples on a fake clock; a schema registry's subjects):
## TestConsoleScreenshot and TestSchemasScreenshot, which check the pages
## and save them.
screenshot:
	GREGOR_SCREENSHOT=docs/img $(GO) test -count=1 -run '^Test(Console|Schemas)Screenshot$$' -v ./admin/

## deps: the programs the tests run that Go does not build: kcat (compat
## suite), chromium (console test), maven (Java clients), python3 with its
## venv module (Python clients, TestPythonClients) and node with npm (kafkajs,
## TestKafkajsSecurity, TestKafkajsSchemaRegistry). Missing ones are installed
## with apt-get, as root or through passwordless sudo; otherwise it stops and
## says what to install. Nothing is done when all are there.
DEPS := kcat:kcat chromium:chromium mvn:maven python3:python3 node:nodejs npm:npm
PYVENV_OK := python3 -c 'import venv, ensurepip' >/dev/null 2>&1
deps:
	@missing=""; pkgs=""; \
	for d in $(DEPS); do c=$${d%%:*}; p=$${d##*:}; \
		command -v $$c >/dev/null 2>&1 || { missing="$$missing $$c"; pkgs="$$pkgs $$p"; }; done; \
	{ command -v python3 >/dev/null 2>&1 && $(PYVENV_OK); } || pkgs="$$pkgs python3-venv"; \
	[ -n "$$pkgs" ] || exit 0; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "make deps: missing:$$pkgs. Install them as root (apt-get install -y$$pkgs) and run make test again." >&2; exit 1; fi; \
	command -v apt-get >/dev/null 2>&1 || { echo "make deps: missing:$$pkgs, and no apt-get to install them with; install them by hand." >&2; exit 1; }; \
	echo "make deps: installing$$pkgs with $${sudo:+sudo }apt-get"; \
	$$sudo apt-get update -qq && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$pkgs >/dev/null || exit 1; \
	for c in $$missing; do command -v $$c >/dev/null 2>&1 || { echo "make deps: $$c still not on the PATH after installing it" >&2; exit 1; }; done; \
	$(PYVENV_OK) || { echo "make deps: python3 still lacks the venv/ensurepip modules after installing python3-venv" >&2; exit 1; }

## test: vet, unit tests, and the compat suite (real clients incl. kcat, the
## Java, Python and kafkajs clients); installs kcat, chromium, maven, python3
## (with venv), node and npm first when missing (deps)
test: deps
	$(GO) vet ./...
	$(GO) test $(RACEFLAG) $(TESTFLAGS) -timeout 20m ./...
	cd bench && $(GO) vet ./... && $(GO) test $(TESTFLAGS) -timeout 2m ./...
	$(GO) test $(TESTFLAGS) -tags kafka -timeout 10m -run 'TestConformanceShort|TestStartStop|TestCluster$$' ./compat/conformance ./compat/kafkaref

unit:
	$(GO) test $(RACEFLAG) $(TESTFLAGS) -timeout 5m ./protocol/... ./storage/... ./broker/... ./coordinator/... ./cluster/... ./replication/...

## race: the unit packages under the race detector (released request frames
## are poisoned in -race builds, so a read after release fails); .ci/run runs it
race:
	$(GO) test -race $(TESTFLAGS) -timeout 20m ./protocol/... ./storage/... ./broker/... ./coordinator/... ./cluster/... ./replication/... ./admin/...

## test-stress: make test with CPU hogs beside it (STRESS_HOGS busy loops,
## default two per core), as on a busy CI machine; STRESS_RUNS times in a row,
## stopping at the first failure. A failure here is a bug to find, not a
## timeout to widen.
STRESS_RUNS ?= 1
STRESS_HOGS ?= $(shell echo $$(( $$(nproc) * 2 )))
test-stress:
	@pids=""; for i in $$(seq $(STRESS_HOGS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	echo "make test-stress: $(STRESS_HOGS) CPU hogs beside make test, $(STRESS_RUNS) run(s)"; \
	for r in $$(seq $(STRESS_RUNS)); do \
		echo "== test-stress run $$r of $(STRESS_RUNS)"; \
		$(MAKE) test TESTFLAGS="$(TESTFLAGS) -count=1" || { echo "== test-stress run $$r failed"; exit 1; }; \
	done

compat: deps
	$(GO) test $(TESTFLAGS) -timeout 10m -v ./compat/...

## compat-tls: franz-go's whole suite over TLS with a client certificate,
## its ETL tests included (make test runs it without them; they run there
## over plain connections, on one node and on three)
compat-tls: build
	GREGOR_FRANZGO_TLS_ALL=1 $(GO) test $(TESTFLAGS) -count=1 -timeout 15m -run 'TestSecurity_FranzGoSuiteOverTLS$$' -v ./compat

## compat-java: the Java client tests (compat/java: kafka-clients 4.x,
## JUnit 5) against a gregor they build and start themselves, then Kafka
## Connect and MirrorMaker 2 (Maven profile connect, Kafka 4.3.1; both also
## run in TestJavaClients, i.e. in make test), then Flink's Confluent-registry
## Avro serdes against the schema registry (profile registry; also
## TestJavaSchemaRegistrySerde); needs a JDK 17+ and Maven (local
## repository ~/.m2). GREGOR_BIN=path skips the go build.
compat-java:
	cd compat/java && mvn -q -B test && mvn -q -B test -Pconnect && mvn -q -B test -Pregistry

## compat-java-streams-chaos: StreamsClusterTest (Kafka Streams with
## group.protocol=streams, exactly_once_v2, on three gregor processes killed
## with kill -9; about 40 s, part of make test) with ROUNDS (default 5) more
## rounds of an instance joining and leaving while the group coordinator and
## a repartition leader are killed (about 20 s each).
ROUNDS ?= 5
compat-java-streams-chaos:
	cd compat/java && mvn -q -B test -Dtest=StreamsClusterTest -Dgregor.streams.chaos.rounds=$(ROUNDS)

## compat-python: the Python client tests (compat/python: confluent-kafka
## and aiokafka under pytest, pinned in compat/python/requirements.txt)
## against a fresh gregor; TestPythonClients, also part of make test. The
## first run makes a venv under `go env GOCACHE`/gregor-compat-python (about
## 10 s with pip's wheel cache warm); later runs reuse it.
compat-python: deps
	$(GO) test $(TESTFLAGS) -count=1 -timeout 10m -run '^TestPythonClients$$' -v ./compat

## compat-cluster: the compat suite with every newBroker a three-node cluster
## (GREGOR_COMPAT_CLUSTER=1: RF 3, min.insync.replicas=2); tests about one
## process (kill -9 cycles, RSS) skip. About five minutes on two cores (three without the mode-independent tests).
compat-cluster: deps
	GREGOR_COMPAT_CLUSTER=1 $(GO) test $(TESTFLAGS) -count=1 -timeout 20m -v ./compat/...

## crash: kill -9 the real broker under load, many cycles (CI runs 3 within make test)
CRASH_CYCLES ?= 25
crash:
	GREGOR_CRASH_CYCLES=$(CRASH_CYCLES) $(GO) test -count=1 -timeout 30m -run '^TestCrash' -v ./compat

## link-kill: the cluster-link tests against Apache Kafka 4.4 (compat/kafkaref;
## java and mvn), among them TestLink_SourceBrokerKilledWhileMirroring: a
## three-node Kafka source under the Jepsen workload, kill -9 and restart of
## the broker leading the most mirrored partitions, then (here, not in make
## test) SIGSTOP of another, the mirror checked with jepsenCheck and byte for
## byte (make test runs it without the SIGSTOP: 80-100 s on two cores; with
## it 2-2.5 min). LINK_NODES=1 mirrors into one Gregor node.
LINK_NODES ?= 3
link-kill:
	GREGOR_LINKKILL_NODES=$(LINK_NODES) GREGOR_LINKKILL_PAUSE=1 $(GO) test -count=1 -timeout 15m -run '^TestLink_' -v ./compat

## jepsen: idempotent acks=all producers, a live consumer, a high-watermark
## monitor, a committing consumer group and transactional producers on a
## 3-node cluster (RF=3, min.insync.replicas=2) while a nemesis kills (group
## and transaction coordinators too), stops and cuts brokers, $(JEPSEN_CYCLES)
## cycles; then every history is checked (compat/jepsen_check_test.go,
## compat/jepsen_check_txn_test.go), never two leaders among them (per
## partition and leaderEpoch one broker, by ListOffsets and every node's
## Metadata). make test runs 2 cycles.
## JEPSEN_NODES=1 runs it against one single-node broker instead.
JEPSEN_CYCLES ?= 20
JEPSEN_NODES  ?= 3
jepsen:
	GREGOR_JEPSEN_NODES=$(JEPSEN_NODES) GREGOR_JEPSEN_CYCLES=$(JEPSEN_CYCLES) $(GO) test -count=1 -timeout 90m -run '^TestClusterJepsen$$' -v ./compat

## jepsen-scale: Jepsen at issue #22's scale (TestClusterJepsenScale): a
## 3-node cluster with $(JEPSEN_SCALE_PARTITIONS) RF=3 partitions
## (min.insync.replicas=2), idempotent acks=all producers writing
## round-robin to every partition, a live consumer, per node a ListOffsets
## (high watermark) and a Metadata (leader) monitor; each of
## $(JEPSEN_SCALE_CYCLES) cycles kill -9s the broker leading the most
## (about a third), waits until every partition it led is led again and
## written by its new leader (the figures are logged), restarts it, waits
## for a full ISR everywhere and moves leadership back with a preferred
## election; then the history is checked as make jepsen's: every
## acknowledged record exactly once at its offset, nothing lost, duplicated
## or regressed, never two leaders. About 50 s a cycle on two busy cores.
## make test runs 1,000 partitions, 1 cycle (about 35 s).
JEPSEN_SCALE_CYCLES     ?= 5
JEPSEN_SCALE_PARTITIONS ?= 3000
jepsen-scale:
	GREGOR_JEPSEN_SCALE_PARTITIONS=$(JEPSEN_SCALE_PARTITIONS) GREGOR_JEPSEN_SCALE_CYCLES=$(JEPSEN_SCALE_CYCLES) $(GO) test -count=1 -timeout 90m -run '^TestClusterJepsenScale$$' -v ./compat

## fuzz: every fuzz target for $(FUZZTIME) each; a run that fails only with Go 1.26's
## fuzztime-deadline race (context deadline exceeded, no input written) runs once more
fuzz:
	@for pkg in ./protocol ./storage ./broker ./security/authn ./schemaregistry; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			for try in 1 2; do \
				out=$$($(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg 2>&1); rc=$$?; \
				echo "$$out"; \
				[ $$rc -eq 0 ] && break; \
				if [ $$try -eq 1 ] && echo "$$out" | grep -q 'context deadline exceeded' && \
					! echo "$$out" | grep -q -e 'Failing input written' -e 'panic:'; then \
					echo "== $$f: Go's fuzz coordinator raced its own -fuzztime deadline (golang/go#75804, fixed in Go 1.27); no input was written: running it once more"; \
					continue; \
				fi; \
				exit 1; \
			done; \
		done; \
	done

## conformance: the same Kafka protocol requests (compat/conformance, 160+
## scenarios) to a real Apache Kafka 4.x broker (compat/kafkaref: KRaft, one
## JVM, jars from Maven Central) and to Gregor; (re)writes docs/conformance.md.
## Needs a JDK 17+ and Maven; about a minute. The short version:
## go test -tags kafka -run TestConformanceShort ./compat/conformance
conformance:
	$(GO) run ./compat/conformance/cmd/gregor-conformance -out docs/conformance.md

## registry-conformance: the same Confluent Schema Registry API requests
## (compat/registrycmp, 28 scenarios) to Gregor's schema registry and to
## Apicurio Registry 2.4.2's Confluent-compatible API (compat/apicurio: built
## from Maven Central with the quarkus-maven-plugin into the user cache
## directory, about 15 s with ~/.m2 warm, a minute or two cold); (re)writes
## docs/registry-conformance.md. Needs a JDK 17+ and Maven; about 10 s once
## built. Not in make test.
registry-conformance:
	$(GO) run ./compat/registrycmp/cmd/gregor-registry-conformance -out docs/registry-conformance.md

## bench-micro: go microbenchmarks of storage, protocol and broker, with
## allocs/op (BenchmarkSmallProduce/SmallFetch: issue #16, docs/benchmarks.md)
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem ./storage ./protocol ./broker

## bench: Gregor beside kfake and Apache Kafka, written to docs/benchmarks.md
## (see bench-compare)
bench: bench-compare

## lint: gofmt, vet, staticcheck, and make cross for $(LINT_CROSS) (linux/amd64
## is built by everything else). (Not tee /dev/stderr: when stderr is a
## file, as .ci/run's log may be, tee reopens it with O_TRUNC and wipes it.)
lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt -l:" >&2; echo "$$out" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(MAKE) cross PLATFORMS="$(LINT_CROSS)"

clean:
	rm -rf bin dist

## bench-cluster: a three-node cluster on this machine: acks=all produce
## throughput RF=3 beside RF=1, and failover time after kill -9 of a leader;
## beside three Apache Kafka 4.4 KRaft nodes when java and mvn are there.
## Knobs: BENCH_CLUSTER_FLAGS="-runs 3 -n 1000000 -failovers 5 -targets gregor,kafka"
bench-cluster:
	cd bench && $(GO) run ./cmd/cluster-bench $(BENCH_CLUSTER_FLAGS)

## bench-scale: one broker at many partitions (issue #22), Gregor beside
## Apache Kafka 4.4 (compat/kafkaref; needs java and mvn): creating 10,000
## partitions in thirds, until every one is writable, RSS and idle CPU,
## Metadata of all topics, clean stop, restart after a clean stop and after
## kill -9, RSS per idle connection; a markdown table on stdout.
## Knobs: BENCH_SCALE_FLAGS="-partitions 10000 -conns 4000 -targets gregor,kafka -out FILE"
## Then the cluster rows, three gregor processes beside three KRaft Kafka
## nodes (cluster-bench): failover of the broker leading the most of
## 3,000 and of 10,000 RF=3 partitions (creation, idle CPU and RSS with
## it) and rolling restarts under acks=all producers.
## Knobs: BENCH_SCALE_CLUSTER_FLAGS="-targets gregor"
BENCH_SCALE_FLAGS ?=
BENCH_SCALE_CLUSTER_FLAGS ?=
bench-scale: build
	cd bench && $(GO) run ./cmd/scale-bench -bin ../bin/gregor $(BENCH_SCALE_FLAGS)
	cd bench && $(GO) run ./cmd/cluster-bench -runs 0 -failovers 0 -warmup 0 -scale-partitions 3000 -rolling 3 $(BENCH_SCALE_CLUSTER_FLAGS)
	cd bench && $(GO) run ./cmd/cluster-bench -runs 0 -failovers 0 -warmup 0 -scale-partitions 10000 $(BENCH_SCALE_CLUSTER_FLAGS)

## bench-link: mirroring from Apache Kafka 4.4 into Gregor, a cluster link
## (gregor link) beside MirrorMaker 2 (compat/java's connect classpath);
## needs java and mvn. Knobs: BENCH_LINK_FLAGS="-mb 512 -partitions 8 -targets link,mm2"
## (-live-mbps 50 -live-for 30s adds the lag while Kafka takes 50 MB/s;
## -gregor-nodes 3 mirrors into three clustered Gregor processes)
BENCH_LINK_FLAGS ?=
bench-link: build
	cd bench && $(GO) run ./cmd/link-bench -bin ../bin/gregor $(BENCH_LINK_FLAGS)

## bench-registry: the built-in schema registry (issue #24): registering
## and looking up schemas over its REST API, one client and several.
## Knobs: BENCH_REGISTRY_FLAGS="-n 2000 -c 8 -d 5s"
BENCH_REGISTRY_FLAGS ?=
bench-registry: build
	cd bench && $(GO) run ./cmd/registry-bench -bin ../bin/gregor $(BENCH_REGISTRY_FLAGS)

## bench-compare: Gregor, kfake and Apache Kafka 4.4 (compat/kafkaref; needs
## java and mvn, else it is left out with a note) as processes on loopback,
## interleaved run by run; writes docs/benchmarks.md. Knobs:
## BENCH_FLAGS="-runs 5 -n 2000000 -targets gregor,kafka -phases throughput,tools"
## (cd bench && go run ./cmd/gregor-bench -h lists them).
BENCH_FLAGS ?=
bench-compare:
	cd bench && $(GO) run ./cmd/gregor-bench $(BENCH_FLAGS)

## bench-kafka: Gregor beside Apache Kafka only (no kfake), including Kafka's
## kafka-producer-perf-test and kafka-consumer-perf-test against both; writes
## bench/results/kafka.md (docs/benchmarks.md is make bench's).
## Short check: make bench-kafka BENCH_FLAGS="-runs 1 -n 100000 -tool-records 100000"
bench-kafka:
	cd bench && $(GO) run ./cmd/gregor-bench -targets gregor,kafka -out results/kafka.md \
		-json results/kafka.json -svg results/kafka.svg $(BENCH_FLAGS)
