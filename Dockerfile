# syntax=docker/dockerfile:1
#
# The lockstep binary in a small image: a static build (CGO_ENABLED=0) in the Go image,
# copied into Alpine, run as the non-root user lockstep (uid 10001) with the data
# directory a volume. Alpine rather than scratch or distroless so the init step of
# deploy/compose.yaml can run `lockstep cert` from a shell and a healthcheck can call
# wget; the binary itself needs nothing of it.
#
#   docker build -t lockstep:dev .
#   docker run --rm lockstep:dev --version
#
# The paths below are the ones deploy/compose.yaml and deploy/kubernetes/ mount
# (tests/packaging checks them): /usr/local/bin/lockstep, /var/lib/lockstep (data) and
# /etc/lockstep/certs (certificates).

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# -buildvcs=false: .git is not in the build context (.dockerignore); `lockstep --version`
# then reports "(devel)", or the module version of a tagged release.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/lockstep ./cmd/lockstep

FROM alpine:3.22
RUN addgroup -S -g 10001 lockstep \
 && adduser -S -D -H -u 10001 -G lockstep -h /var/lib/lockstep lockstep \
 && mkdir -p /var/lib/lockstep /etc/lockstep/certs /etc/lockstep/ca \
 && chown lockstep:lockstep /var/lib/lockstep /etc/lockstep/certs /etc/lockstep/ca \
 && chmod 0700 /var/lib/lockstep /etc/lockstep/ca
COPY --from=build /out/lockstep /usr/local/bin/lockstep
USER 10001:10001
VOLUME ["/var/lib/lockstep"]
WORKDIR /var/lib/lockstep
ENV LOCKSTEP_CERTS_DIR=/etc/lockstep/certs
# raft, client, admin (HTTPS), probe (plain HTTP: /healthz, /readyz)
EXPOSE 7001 8001 9001 9090
ENTRYPOINT ["/usr/local/bin/lockstep"]
CMD ["node", "--help"]
