# gitaso — see README.md. Every target works on a fresh machine with Go 1.26 and git.
GO      ?= go
BIN     := bin/gitaso
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/gitaso/gitaso/internal/cli.Version=$(VERSION)
# kustomize imports Go's plugin package, which keeps the linker from dropping dead code (+27 MB);
# gitaso never loads kustomize plugins.
TAGS    := kustomize_disable_go_plugin_support
SHARED  ?= $(abspath ../shared)

.PHONY: all build test test-short lint bench fuzz demo catalog aso-catalog aso-removed emulator-table roles clean reliability image aso-anchor

all: build

build:
	$(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gitaso

## test: every test with the race detector (conformance tests read $(SHARED) and skip without it)
test:
	rc=0; GITASO_SHARED=$(SHARED) $(GO) test -race -count=1 -timeout 30m -tags '$(TAGS)' ./... || rc=$$?; \
	GITASO_SHARED=$(SHARED) bash scripts/test-skips.sh; exit $$rc

test-short:
	GITASO_SHARED=$(SHARED) $(GO) test -count=1 -short ./...

## lint: gofmt, go vet and staticcheck (pinned; the module proxy serves it), all with zero findings
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags '$(TAGS)' ./...
	$(GO) run $(STATICCHECK) -tags '$(TAGS)' ./...

## bench: benchmarks named in the issues; figures are reported in the issue notes
bench:
	GITASO_SHARED=$(SHARED) $(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 60m -tags '$(TAGS)' ./... | tee bench.out

## fuzz: every fuzz target (parse, render, plan) for FUZZTIME each; prints the time it all took
FUZZTIME    ?= 20s
# Go minimises every new interesting input for up to 60 s by default, which stalls short runs on big seeds.
FUZZFLAGS   ?= -fuzzminimizetime 2s
FUZZTARGETS ?= ./source:FuzzParseFile ./source/render:FuzzRender ./source/render:FuzzSubstitute \
               ./source/render:FuzzDecryptSOPS ./source/render:FuzzFlux ./planner:FuzzPlan ./aso:FuzzConvert \
               ./source/charts:FuzzParseIndex ./source/charts:FuzzArchiveMetadata
fuzz:
	@start=$$(date +%s); failed=; \
	for t in $(FUZZTARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$fn ($$pkg, $(FUZZTIME))"; \
		GITASO_SHARED=$(SHARED) $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$pkg || failed="$$failed $$fn"; \
	done; \
	echo "fuzz: $$(( $$(date +%s) - start ))s for $(words $(FUZZTARGETS)) targets of $(FUZZTIME)"; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed (inputs in the packages' testdata/fuzz)"; exit 1; fi

## catalog: regenerate the embedded ASO catalog from ../shared/aso-schema; the removed versions (aso/catalog/removed.json)
## are read from ASO's release tags: make catalog ASO_SRC=<ASO git dir or clone> (see aso-catalog)
catalog:
	@test -n '$(ASO_SRC)' || { echo "make catalog ASO_SRC=<ASO git dir>: the removed versions are read at ASO's release tags (or use make aso-catalog, which reads everything from ASO's source)"; exit 2; }
	$(GO) run ./aso/gen -schema $(SHARED)/aso-schema -out aso/catalog/catalog.json.gz -releases-git '$(ASO_SRC)'

## aso-catalog: regenerate the embedded ASO catalog from ASO's own source, without ../shared (docs/aso-upgrade.md):
## make aso-catalog ASO_SRC=<ASO git dir or clone> [ASO_REF=<commit or tag>] reads ASO_REF (a clone: its work tree at ASO_REF); a plain
## copy of the tree (git archive) also needs ASO_GIT=<git dir it came from>, or ASO_COMMIT and ASO_COMMIT_DATE.
## FACTS_OUT=<dir> also writes the extracted facts in ../shared/aso-schema's layout (for diffing).
## It first lists the versions removed since v2.0.0 (aso-removed; ASO_TAGS=v2.0.0,v2.1.0,... limits the releases compared)
## and adds each, read at the release tag that last had it, from the Git repository (ASO_GIT, else ASO_SRC).
aso-catalog: aso-removed
	@test -n '$(ASO_SRC)' || { echo "make aso-catalog ASO_SRC=<ASO git dir, clone or copy of its tree> [ASO_REF=<commit or tag>] [ASO_GIT=<git dir>] [FACTS_OUT=<dir>]"; exit 2; }
	$(GO) run ./aso/gen -aso-src '$(ASO_SRC)' -aso-ref '$(ASO_REF)' $(if $(ASO_GIT),-aso-git '$(ASO_GIT)') \
		$(if $(ASO_COMMIT),-aso-commit '$(ASO_COMMIT)') $(if $(ASO_COMMIT_DATE),-aso-commit-date '$(ASO_COMMIT_DATE)') \
		$(if $(CATALOG_DATE),-date '$(CATALOG_DATE)') $(if $(FACTS_OUT),-facts-out '$(FACTS_OUT)') \
		-releases-git '$(or $(ASO_GIT),$(ASO_SRC))' -removed aso/catalog/removed.json -out aso/catalog/catalog.json.gz

## emulator-table: regenerate the emulator's per-type answers (status, LRO style) from ../shared/conformance/arm-responses.json
emulator-table:
	$(GO) run ./emulator/gen -in $(SHARED)/conformance/arm-responses.json -sets $(SHARED)/conformance/aso \
		-supplement emulator/gen/supplement.json -out emulator/armtable_gen.go

## aso-removed: regenerate aso/catalog/removed.json, the ASO versions removed since v2.0.0 (aso.LookupRemoved), from
## ASO's release tags and the catalog's commit: make aso-removed ASO_SRC=<ASO checkout or git dir> [ASO_REF=<commit>]
ASO_REF ?= e88a45d1f78cb4946b8c96b1c629d35963ac81dd
aso-removed:
	$(GO) run ./aso/gen/removed -git '$(or $(ASO_GIT),$(ASO_SRC))' -ref '$(ASO_REF)' -tags '$(ASO_TAGS)' -out aso/catalog/removed.json

## roles: regenerate aso/roles/builtin-roles.json, Azure's built-in roles (aso/roles.go), from a role list:
## ROLES_FROM is a directory of `az role definition list` files (github.com/easimon/azure-builtin-roles azure-roles/),
## that list as one file, or ARM's GET /providers/Microsoft.Authorization/roleDefinitions answer; ROLES_SOURCE says
## where it came from; ROLES_CROSSCHECK optionally names a second list (the AVM cache role_definitions.tf.json)
ROLES_SUPPLEMENT        ?= aso/gen/roles/supplement.json
ROLES_DATE              ?= $(shell date -u +%F)
ROLES_SUPPLEMENT_SOURCE ?= github.com/MicrosoftDocs/azure-docs, articles/role-based-access-control/built-in-roles.md at commit 00a583295ba737a5caf885472cb3bca3624e9cde (ms.date 04/09/2026), the only roles of its index (all compared) missing from -from
roles: export ROLES_SOURCE := $(ROLES_SOURCE)
roles: export ROLES_SUPPLEMENT_SOURCE := $(ROLES_SUPPLEMENT_SOURCE)
roles: export ROLES_CROSSCHECK_SOURCE := $(ROLES_CROSSCHECK_SOURCE)
roles:
	@test -n "$$ROLES_SOURCE" -a -n '$(ROLES_FROM)' || { echo "make roles ROLES_FROM=<dir or file> ROLES_SOURCE='<repo, path, commit, date>' [ROLES_CROSSCHECK=<file> ROLES_CROSSCHECK_SOURCE='...']"; exit 2; }
	$(GO) run ./aso/gen/roles -from '$(ROLES_FROM)' -source "$$ROLES_SOURCE" \
		-supplement '$(ROLES_SUPPLEMENT)' -supplement-source "$$ROLES_SUPPLEMENT_SOURCE" \
		$(if $(ROLES_CROSSCHECK),-crosscheck '$(ROLES_CROSSCHECK)' -crosscheck-source "$$ROLES_CROSSCHECK_SOURCE") \
		-date '$(ROLES_DATE)' -out aso/roles/builtin-roles.json

## demo: local Azure emulator + gitaso daemon on a Git repo made from examples/ (Ctrl-C to stop)
demo:
	@[ -x $(BIN) ] || echo "building $(BIN) first: about 2-3 minutes on a fresh machine (Go modules are downloaded), seconds afterwards"
	@$(MAKE) --no-print-directory build
	bash scripts/demo.sh

## reliability: kill -9 trials, a fault soak and hostile inputs against bin/gitaso; prints one table per part.
## Takes minutes (not part of test or CI). Flags: make reliability RELIABILITY_FLAGS='-seed 7 -trials 100 -v'
## (docs/reliability.md).
reliability: build
	$(GO) run ./harness/reliability/cmd/reliability -gitaso $(BIN) $(RELIABILITY_FLAGS)

## aso-anchor: the same manifests through ASO's own controller (on kube-apiserver + etcd) and through gitaso, each
## against a fresh emulator with ARM's throttling: time to Ready, ARM requests, CPU and memory, and every PUT and
## final body compared (docs/aso-anchor.md). Not part of test or CI. It only reuses ASO's controller binary and
## CRDs, built by hand outside this repository (ASO_CONTROLLER, ASO_CRDS); kube-apiserver and etcd come from
## scripts/kube-binaries.sh. Flags: make aso-anchor ANCHOR_FLAGS='-workloads tree -idle-period 2m -restart'
ASO_CONTROLLER ?= $(HOME)/.cache/gitaso/aso/controller
ASO_CRDS       ?= $(HOME)/.cache/gitaso/aso/crds
ANCHOR_FLAGS   ?=
aso-anchor: build
	$(GO) run -tags '$(TAGS)' ./harness/anchor/cmd/aso-anchor -aso-controller '$(ASO_CONTROLLER)' -aso-crds '$(ASO_CRDS)' -gitaso $(BIN) \
		-shared $(SHARED) $(ANCHOR_FLAGS)

## image: the container image, built offline (no Docker, no base image; docs/deploy.md): a static binary for
## linux/$(GOARCH) in bin/linux_$(GOARCH)/, then bin/image/oci (OCI layout) and bin/image/gitaso.tar (docker load)
GOARCH            ?= $(shell $(GO) env GOARCH)
CA_BUNDLE         ?= /etc/ssl/certs/ca-certificates.crt
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o bin/linux_$(GOARCH)/gitaso ./cmd/gitaso
	GOOS= GOARCH= $(GO) run ./harness/image/cmd/mkimage -binary bin/linux_$(GOARCH)/gitaso -arch $(GOARCH) -ca $(CA_BUNDLE) \
		-version $(VERSION) -revision $$(git rev-parse HEAD 2>/dev/null) -created $(SOURCE_DATE_EPOCH) \
		-layout bin/image/oci -tarball bin/image/gitaso.tar

clean:
	rm -rf bin bench.out
