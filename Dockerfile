# syntax=docker/dockerfile:1
#
# The Allot image: one static binary, /usr/local/bin/allot, that runs as the
# server (`allot server`) or as a worker (`allot worker`). Build both targets
# with scripts/image; docs/deploy.md says what each is for.
#
#   static (the default, last stage): distroless/static, no shell, runs as
#          nonroot (65532). For the server, and for workers whose tasks are
#          static binaries.
#   slim:  debian-slim with a shell and coreutils, runs as root so that the
#          agent can run its tasks as nobody (--run-as). For workers whose
#          tasks are scripts, and for the server where an operator needs a
#          shell (the Kubernetes manifests use it for both); a team with its
#          own task image copies the binary in instead
#          (COPY --from=allot:TAG /usr/local/bin/allot /usr/local/bin/allot).
#
# The binary is built with CGO_ENABLED=0: the embedded store is SQLite through
# modernc.org/sqlite, which is pure Go, and PostgreSQL is reached with pgx,
# also pure Go, so nothing of libc is needed at run time.
# deploy/image_test.go runs this stage's `go build` line and checks that the
# result has no ELF interpreter and no dynamic section.

ARG GO_VERSION=1.26.8

# The build runs on the builder's own platform and cross-compiles for the
# target's (docker buildx build --platform linux/amd64,linux/arm64).
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION}" -o /out/allot ./cmd/allot
# The server's data directory, owned by the static image's user.
RUN mkdir -p /out/data

FROM debian:bookworm-slim AS slim
# ca-certificates: an https server's certificate is checked against them
# (or against --ca). tini (-s: as a subreaper, wherever its PID) reaps the
# orphans of tasks, which would otherwise stay zombies under the agent as
# the container's PID 1, and passes SIGTERM on to the agent.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tini \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/allot /usr/local/bin/allot
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/local/bin/allot"]
CMD ["worker"]

FROM gcr.io/distroless/static-debian12:nonroot AS static
COPY --from=build /out/allot /usr/local/bin/allot
# The server's data directory (the embedded store, its lock, admin.token):
# mount a volume here.
COPY --from=build --chown=65532:65532 /out/data /var/lib/allot
EXPOSE 7070
ENTRYPOINT ["/usr/local/bin/allot"]
CMD ["server", "--listen", "0.0.0.0:7070", "--data-dir", "/var/lib/allot"]
