# The operator image: a static binary on an empty base, run as 65532:65532 (nonroot). It holds
# what `make images` puts in bin/images/pickyman-operator.tar without Docker (docs/images.md):
# the binary, /etc/passwd and /etc/group naming root and nonroot, and /tmp (1777).
#   docker build -t ghcr.io/pickyman/pickyman-operator:dev .    (or: make docker-build)
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=false -ldflags '-s -w' \
      -o /rootfs/pickyman-operator ./operator/cmd/pickyman-operator
RUN mkdir -p /rootfs/etc /rootfs/tmp && chmod 1777 /rootfs/tmp && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' > /rootfs/etc/passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/pickyman-operator"]
