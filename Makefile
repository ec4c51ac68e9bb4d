# Run `make help` for the targets.
SHELL := bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
# The commit's time, not the clock's: two builds of one commit are the same
# binaries and the same image (make image); the clock only outside a clone.
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
# staticcheck, pinned, fetched through the Go module proxy.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
LDFLAGS := -s -w -X github.com/prometheus/common/version.Version=$(VERSION) -X github.com/prometheus/common/version.Revision=$(REVISION) -X github.com/prometheus/common/version.BuildDate=$(BUILD_DATE)

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the binaries (receiver, register, fetcher, cdse-sim, subscribe) into bin/
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/... ./examples/...

.PHONY: run
run: ## run the receiver with the embedded NATS and the development settings of configs/dev.yaml
	$(GO) run -ldflags '$(LDFLAGS)' ./cmd/receiver --config configs/dev.yaml

.PHONY: s3-local
s3-local: ## a local S3 server for the fetcher (versitygw, as tools/go.mod pins it) on 127.0.0.1:7070 serving data/s3, its bucket products created; prints the fetcher's AWS_* settings (S3_LOCAL_ADDR, S3_LOCAL_DIR, S3_LOCAL_BUCKET)
	./scripts/s3-local.sh

.PHONY: run-fetcher
run-fetcher: ## run the fetcher beside `make run` (configs/fetcher-dev.yaml) into ./products; export CDSE_USERNAME and CDSE_PASSWORD first
	mkdir -p products
	$(GO) run -ldflags '$(LDFLAGS)' ./cmd/fetcher --config configs/fetcher-dev.yaml

.PHONY: demo
demo: ## the whole chain locally: simulator, receiver with two named interests, a subscriber per interest, register apply, a few products, the fetcher storing them verified into a directory
	./scripts/demo.sh

.PHONY: test
test: examples/node/node_modules/.package-lock.json jq ## run the whole test suite (gofmt, vet, staticcheck, race detector, seed corpora of the fuzz targets, the Go/CloudEvents/Node consumers)
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GO=$(GO) STATICCHECK=$(STATICCHECK) MAKE=$(MAKE) ./scripts/test.sh

.PHONY: test-side
test-side: promtool ## the small suites of make test: the routing-only header build, the chart, the CloudEvents example, the alert rules, the image builder
	$(GO) test -count=1 -tags benchbaseheaders ./internal/ingest
	cd charts/test && $(GO) test -count=1 ./...
	cd examples/cloudevents && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory rules-test
	cd tools && $(GO) vet ./imagebuild && $(GO) test -count=1 ./imagebuild

.PHONY: rules-test
rules-test: promtool ## check and unit-test the Prometheus alerts (promtool test rules)
	promtool check rules charts/receiver/files/prometheus-rules.yaml
	promtool test rules deploy/prometheus/rules_test.yaml

# promtool, from Debian's prometheus package when it is missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
.PHONY: promtool
promtool:
	@command -v promtool >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

# jq, from Debian's package when it is missing: test/docs runs
# docs/consumers.md's cron lines, which use it.
.PHONY: jq
jq:
	@command -v jq >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends jq >/dev/null; }

# The Node.js consumer's packages, from its lockfile.
examples/node/node_modules/.package-lock.json: examples/node/package-lock.json
	cd examples/node && npm ci --no-audit --no-fund

.PHONY: test-short
test-short: ## quick tests: no race detector, no binary builds
	$(GO) test -short -count=1 ./...

.PHONY: bench
bench: ## micro-benchmarks of the hot path, then the load harness (BENCHFLAGS, e.g. -duration 10s -conns 32 -cpuprofile cpu.prof)
	$(GO) test ./internal/cdse/notification ./internal/ingest -run '^$$' -bench . -benchmem
	$(GO) run ./bench/cmd/bench $(BENCHFLAGS)

.PHONY: bench-compare
bench-compare: ## the load harness with this tree's receiver and the one committed at REV (default HEAD) loaded in the same rounds: a hot-path change's before/after (BENCHFLAGS)
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && mkdir "$$d/src" && \
	git archive $(or $(REV),HEAD) | tar -x -C "$$d/src" && \
	(cd "$$d/src" && $(GO) build -o "$$d/receiver" ./cmd/receiver) && \
	$(GO) run ./bench/cmd/bench -compare "$$d/receiver" $(BENCHFLAGS)

.PHONY: bench-handler
bench-handler: ## the webhook handler's request path in-process (BenchmarkHandler: sec, CPU ns, bytes and allocations per request), this tree against REV (default HEAD) in alternating runs of the same binary pair, compared with benchstat (COUNT, default 10); REV=HEAD is the A/A run that shows the noise
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && mkdir "$$d/src" && \
	git archive $(or $(REV),HEAD) | tar -x -C "$$d/src" && \
	old=./internal/ingest/webhook && { [ -d "$$d/src/internal/ingest/webhook" ] || old=./internal/webhook; } && \
	(cd "$$d/src" && $(GO) test -c -o "$$d/old.test" $$old) && $(GO) test -c -o "$$d/new.test" ./internal/ingest/webhook && \
	for i in $$(seq $(or $(COUNT),10)); do \
		(cd "$$d/src/$$old" && "$$d/old.test" -test.run '^$$' -test.bench Handler -test.benchmem -test.count 1) >>"$$d/old.txt" && \
		(cd ./internal/ingest/webhook && "$$d/new.test" -test.run '^$$' -test.bench Handler -test.benchmem -test.count 1) >>"$$d/new.txt"; \
	done && \
	$(GO) tool -modfile=tools/go.mod benchstat -ignore pkg "$$d/old.txt" "$$d/new.txt"

.PHONY: bench-interests
bench-interests: ## what 20 named interests cost: this tree's receiver with INTERESTS_FILE (INTERESTS, default bench/interests20.yaml: one copy per product; bench/interests20-none.yaml: evaluation only) against itself without, loaded in the same rounds (BENCHFLAGS, default -rounds 8 -duration 5s)
	$(GO) test ./internal/ingest/interest -run '^$$' -bench Router -benchmem
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) build -o "$$d/receiver" ./cmd/receiver && \
	$(GO) run ./bench/cmd/bench -compare "$$d/receiver" -receiver-env "INTERESTS_FILE=$(abspath $(or $(INTERESTS),bench/interests20.yaml))" -compare-env "" $(or $(BENCHFLAGS),-rounds 8 -duration 5s)

.PHONY: bench-headers
bench-headers: ## what the consumer headers cost: this tree's receiver against the same built with only the routing headers (-tags benchbaseheaders), loaded in the same rounds (BENCHFLAGS, default -rounds 12 -duration 5s)
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) build -tags benchbaseheaders -o "$$d/receiver" ./cmd/receiver && \
	$(GO) run ./bench/cmd/bench -compare "$$d/receiver" $(or $(BENCHFLAGS),-rounds 12 -duration 5s)

.PHONY: bench-fetch
bench-fetch: ## the fetcher server against a plain copy of the same bytes at the live 20 MB/s a connection, 1 and 4 streams, into a directory and a real S3 store (and a plain copy into that store); a file selection (S2 L2A 10 m bands) against the whole archive, time and bytes; the hashing ceiling; peak RSS of a 2 GiB product (BENCHFLAGS, e.g. -rounds 5 -mib 400 -rss-mib 4096 -streams 4 -phases -files GLOBS)
	$(GO) test ./bench/fetch -run '^$$' -bench Fetch -benchtime 1x -timeout 60m -v -args $(BENCHFLAGS)

.PHONY: bench-grow
bench-grow: ## cost as the stream grows: restart time, RSS, throughput and p99 with 0/100k/1M/5M messages, embedded and external, and NATS_EMBEDDED_SYNC=always (GROWFLAGS)
	$(GO) run ./bench/cmd/grow -sizes $(or $(SIZES),0,100000,1000000,5000000) -sync $(GROWFLAGS)

.PHONY: soak
soak: ## 10-minute soak at a steady rate: RSS, goroutines and open files must stay flat (SOAKFLAGS to change)
	$(GO) run ./bench/cmd/bench -soak 10m -soak-rate 200 $(SOAKFLAGS)

.PHONY: chaos
chaos: ## separate processes under seeded faults: 3-node NATS cluster, 2 receivers, 2 fetchers into a real S3 server, the simulator; CHAOS_RUNS seeds in a row of CHAOS_DURATION each (default 3 × 3m; CHAOS_SEED=n replays one)
	CHAOS_DURATION=$(or $(CHAOS_DURATION),3m) CHAOS_RUNS=$(or $(CHAOS_RUNS),3) $(GO) test ./test/chaos -run '^TestChaos$$' -count=1 -v -timeout 120m

.PHONY: fuzz
fuzz: ## fuzz the notification decoder, the interests' filter parser and product reader, and the headers built (footprints with huge and non-finite numbers, coordinates, the entity's offsets), each target for FUZZTIME (default 2m)
	$(GO) test ./internal/cdse/notification -run '^$$' -fuzz FuzzParse -fuzztime $(or $(FUZZTIME),2m) -fuzzminimizetime 1s
	for f in FuzzParseFilter FuzzFootprint FuzzReadFootprintWKT FuzzShortDecimal FuzzFromNotification; do \
		$(GO) test ./internal/cdse/productfilter -run '^$$' -fuzz "^$$f\$$" -fuzztime $(or $(FUZZTIME),2m) -fuzzminimizetime 1s || exit 1; done
	$(GO) test ./internal/ingest -run '^$$' -fuzz FuzzHeaders -fuzztime $(or $(FUZZTIME),2m) -fuzzminimizetime 1s

.PHONY: lint
lint: ## go vet, gofmt, staticcheck and govulncheck (fetched through the Go module proxy)
	$(GO) vet ./...
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...
	$(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...

.PHONY: chart-lint
chart-lint: ## lint and render-test the Helm chart (with the Helm Go module; `helm lint` too if installed)
	cd charts/test && $(GO) test -count=1 ./...
	@if command -v helm >/dev/null; then helm lint charts/receiver --set auth.password=a-long-webhook-password --set nats.embedded.consumerPassword=x; fi

.PHONY: image
image: ## build the container image without a container engine into bin/image.tar (IMAGE to name it; docker/podman load, crane push)
	rm -rf bin/image-root && mkdir -p bin/image-root
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/image-root/ ./cmd/receiver ./cmd/register ./cmd/fetcher
	cd tools && $(GO) run ./imagebuild -bin ../bin/image-root -o ../bin/image.tar -tag $(or $(IMAGE),cdse-receiver:$(VERSION)) \
		-version $(VERSION) -revision $(REVISION) -created $$(git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: tidy
tidy: ## fail if go.mod/go.sum (of both modules) are not tidy
	$(GO) mod tidy
	cd charts/test && $(GO) mod tidy
	cd examples/cloudevents && $(GO) mod tidy
	git diff --exit-code go.mod go.sum charts/test/go.mod charts/test/go.sum examples/cloudevents/go.mod examples/cloudevents/go.sum
# (tools/ is not tidied: go mod tidy wants the test dependencies of natscli's
# dependencies, some of which the module proxy refuses; go get -tool made it.)
