# subpool — `make run` and `make test` do all the set-up on Debian/Ubuntu.
GO      ?= go
BIN     ?= ./subpool
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/subpool/subpool/daemon.Version=$(VERSION)

.PHONY: all run build build-headless check-headless test test-fast bench lint fuzz screenshot package deps dist

all: build

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

# Every verb but the tray, with no cgo: a static binary for containers,
# home servers and boxes without libGL/X11 (`subpool serve`, the service).
build-headless:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o ./subpool-headless .

# The headless build links no Fyne, GL or X11, and compiles and vets for
# macOS and Windows too (all without cgo, so seconds once cached).
check-headless:
	scripts/check-headless.sh $(GO)

# The demo: the tray when a display exists, else the headless proxy with
# its decisions printed.
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then $(BIN) demo --gui; else $(BIN) demo; fi

# Everything, with the race detector, inside a private D-Bus session with a
# real gnome-keyring so the keychain tests talk to a real Secret Service.
test: deps
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt: run 'gofmt -w .' on:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	scripts/check-headless.sh $(GO)
	scripts/dist-tool.sh actionlint $(GO) .github/workflows/ci.yml .github/workflows/release.yml
	scripts/keyring-test.sh $(GO) test -race -count=1 ./...

# The real-client suite and the fidelity tests against each client's newest
# release on the npm registry instead of its pin (internal/realclients,
# SUBPOOL_REALCLIENTS_LATEST): first each pin beside the newest version,
# then what the tests say moved with them. Not part of `make test`.
.PHONY: test-latest
test-latest: deps
	SUBPOOL_REALCLIENTS_LATEST=1 $(GO) test -count=1 -v -run '^TestLatestVersions$$' ./internal/realclients/
	@s=0; \
	SUBPOOL_REALCLIENTS_LATEST=1 $(GO) test -count=1 -run 'TestLoginValuesAreTheRealClients|TestGoogleLoginValuesAreGeminiCLIs|TestRealCodexHonoursSubpoolsLocks' ./internal/oauth/ || s=1; \
	SUBPOOL_REALCLIENTS_LATEST=1 $(GO) test -count=1 -run 'TestSetupIsGeminiCLIs' ./internal/codeassist/ || s=1; \
	SUBPOOL_REALCLIENTS_LATEST=1 scripts/keyring-test.sh $(GO) test -count=1 -timeout 60m ./app/realclients/ || s=1; \
	exit $$s

# The pure packages alone: no cgo, no display, seconds.
test-fast:
	CGO_ENABLED=0 $(GO) test ./proxy/... ./keychain/...

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	$(GO) vet ./...

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzVerdict -fuzztime=$${FUZZTIME:-1000000x} ./proxy/classify/

bench:
	$(GO) run ./bench

screenshot: build
	@scripts/deps.sh --screenshot
	scripts/screenshot.sh $(BIN) docs/screenshot.png

# Everything a release carries, into dist/: .deb, .rpm, Linux tarballs,
# the Windows zip, Homebrew formula and cask, SHA256SUMS and its ed25519
# signature (SUBPOOL_SIGNING_KEY, else a throwaway key it names).
dist: deps
	scripts/dist.sh $(GO)

# The desktop package for this host, made by the fyne tool (installed
# apart from go.mod, which would otherwise move Fyne to another version).
package: deps
	@command -v fyne >/dev/null 2>&1 || $(GO) install fyne.io/tools/cmd/fyne@v1.7.4
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" fyne package -os $$($(GO) env GOOS) --release --app-version 0.1.0 --app-build 1 --name subpool
	@if [ "$$($(GO) env GOOS)" = linux ]; then scripts/check-package.sh subpool.tar.xz; fi
