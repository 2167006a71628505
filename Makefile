# gtpqos — QER GBR/MBR -> Linux HTB for free5GC's gtp5g.
# Every target that touches the kernel needs root ('sudo make ...' elsewhere).

GO      ?= go
BIN     := bin/gtpqos
PKGS    := ./...
# Fuzz smoke: how many inputs each decoder fuzz target tries inside 'make test'.
# A count, not a duration: with a duration, Go's fuzzer can end a healthy run
# with "context deadline exceeded" when the deadline lands mid-exec.
FUZZTIME ?= 20000x

.PHONY: help deps build test unit fuzz vm-test demo bench lint clean generate image

help: ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

deps: ## Install missing Debian packages (iproute2, qemu, busybox, iperf3) and Go modules
	@./scripts/deps.sh
	@$(GO) mod download

build: ## Build bin/gtpqos
	@mkdir -p bin
	$(GO) build -o $(BIN) ./cmd/gtpqos

# Packages whose tests measure throughput through the lab: run one at a time,
# after the rest, so a parallel build or a 10k-class test does not skew them.
TIMED   := ./lab/ ./tests/stock/

test: deps ## Run every test: unit, fuzz smoke, netns (root) and the Debian-kernel VM (root)
	$(GO) test -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -v -e '/lab$$' -e '/tests/stock$$')
	$(GO) test -count=1 -p 1 -timeout 20m $(TIMED)
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory vm-test

# Packages 'make unit' tests at a time: its netns tests wait on the kernel
# and on the commands they run more than they compute, so at least 4 (more
# on a host with more CPUs than that) finish sooner than go test's default
# of one per CPU.
UNIT_P  ?= $(shell n=$$(nproc 2>/dev/null || echo 4); [ "$$n" -gt 4 ] && echo $$n || echo 4)

unit: ## The fast loop: go test -short, UNIT_P packages at a time (lab throughput and tests/stock skip; netns tests run as root)
	$(GO) test -short -count=1 -p $(UNIT_P) $(PKGS)

fuzz: ## Run each decoder fuzz target briefly (FUZZTIME inputs each, default 20000x)
	@./scripts/fuzz.sh $(FUZZTIME)

vm-test: deps ## Boot Debian 12's 6.1 kernel under qemu and run every TestVM* (shaper, lab, gtp5g with GTP5G_KO; 6.12 for TestVMKernel612) inside it (root)
	GTPQOS_VM=1 $(GO) test -count=1 -p 1 -timeout 60m -run '^TestVM' -v $(PKGS)

demo: deps build ## Reproduce the seed experiment (static vs aware HTB) in network namespaces (root)
	./$(BIN) ab --lab --demo

bench: deps ## Run the benchmarks (root for the netns ones) and print their numbers
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m $(PKGS)

# deadcode (from the Go module proxy, run not installed): a function that
# neither the product nor a test reaches is reported and fails lint.
DEADCODE ?= golang.org/x/tools/cmd/deadcode@v0.52.0

lint: ## gofmt, go vet and deadcode (functions nothing reaches, tests included)
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet $(PKGS)
	@out=$$($(GO) run $(DEADCODE) -test $(PKGS)) && test -z "$$out" || { echo "$$out"; echo "deadcode: functions above are reached by nothing"; exit 1; }

generate: ## Rebuild the BPF objects (shaper/classify, shaper/classify/gtpu, shaper/edt) with clang via bpf2go (installs clang, llvm, libbpf-dev if missing)
	@command -v clang >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || apt-get install -y clang llvm libbpf-dev
	BPF_CFLAGS="-I/usr/include/$$(uname -m)-linux-gnu" $(GO) generate ./shaper/classify/ ./shaper/classify/gtpu/ ./shaper/edt/

IMAGE   ?= gtpqos:latest

image: ## Build the container image (deploy/Containerfile: static gtpqos and busybox on scratch, no registry) with podman, buildah or docker, where one can build
	@GO=$(GO) ./scripts/image.sh $(IMAGE)

clean: ## Remove build output
	rm -rf bin
