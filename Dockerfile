# Multi-stage build: a static binary on a minimal, non-root runtime image,
# cross-compiled for the platform being built (docker buildx --platform
# linux/amd64,linux/arm64) and stamped with VERSION and REVISION
# (make build passes the same), which `steward version` and
# steward_build_info report.
#
# Both base images are pinned by digest, so a build is repeatable and a
# changed upstream image arrives as a reviewed change: Dependabot
# (.github/dependabot.yml, docker ecosystem) bumps the digests while
# keeping the tags. The digests were taken from Renovate's digest updates
# in public repositories (golang:1.26 -> 3c3e25a, September 2026;
# gcr.io/distroless/static-debian12:nonroot -> f5b485e, August 2026), as
# no registry was reachable when they were pinned; check them with
# `docker buildx imagetools inspect <image>:<tag>`.
FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79 AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=devel
ARG REVISION=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY webhooks webhooks
COPY certs certs
COPY check check
COPY manifests manifests
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION" \
    -o /out/steward ./cmd/steward

# The runtime both final stages share.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:f5b485ea962d9bd1186b2f6b3a061191539b905b82ec395de78cbfae51f20e35 AS runtime
USER 65532:65532
ENTRYPOINT ["/steward"]
CMD ["serve"]

# release is the image GoReleaser publishes (.goreleaser.yaml, dockers_v2,
# --target=release): the binary it already built and checksummed for the
# archives, from its build context's <os>/<arch>/steward, so the image and
# the archives ship the same bytes. The build stage is not run for it.
FROM runtime AS release
ARG TARGETPLATFORM
COPY $TARGETPLATFORM/steward /steward

# The default target: built from source, as above.
FROM runtime
COPY --from=build /out/steward /steward
