# Multi-stage build: a static binary on a minimal, non-root runtime image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY webhooks webhooks
COPY certs certs
COPY manifests manifests
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/steward ./cmd/steward

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/steward /steward
USER 65532:65532
ENTRYPOINT ["/steward"]
CMD ["serve"]
