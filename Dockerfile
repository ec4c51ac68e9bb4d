# Multi-stage build of the receiver image: both binaries (receiver, register)
# on a distroless base, as a non-root user. Build with `make image`.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=
ARG BUILD_DATE=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${VERSION} -X github.com/prometheus/common/version.Revision=${REVISION} -X github.com/prometheus/common/version.BuildDate=${BUILD_DATE}" \
      -o /out/ ./cmd/receiver ./cmd/register

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/receiver /out/register /usr/local/bin/
# The embedded NATS store; mount a volume here (the chart does).
ENV RECEIVER_DATA_DIR=/data
USER 65532:65532
EXPOSE 8080 9090 4222
ENTRYPOINT ["/usr/local/bin/receiver"]
