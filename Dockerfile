# Multi-stage build: a static binary on a minimal, non-root runtime image,
# cross-compiled for the platform being built (docker buildx --platform
# linux/amd64,linux/arm64) and stamped with VERSION and REVISION
# (make build passes the same), which `steward version` and
# steward_build_info report.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
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
COPY manifests manifests
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION" \
    -o /out/steward ./cmd/steward

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/steward /steward
USER 65532:65532
ENTRYPOINT ["/steward"]
CMD ["serve"]
