# The floe image: nothing but the static binary built on the host, so the
# image is built without pulling anything. Build it with deploy/build.sh
# (or `task images`), which first runs
#   CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=... -X main.revision=..." -o bin/floe ./cmd/floe
# and makes bin/rootfs (empty /data and /tmp owned by the image's user).
#
#   docker run -v floe-data:/data -p 7700:7700 floe:dev dev --data-dir /data --listen 0.0.0.0:7700
#   docker run ... floe:dev serve --id 1 --data-dir /data --listen 0.0.0.0:7700 ...
#
# The health check of a node started with --http ADDR needs no shell:
#   /floe health --http 127.0.0.1:8080   (GET /readyz, exit 0 when ready)
FROM scratch
COPY --chown=65532:65532 bin/rootfs/ /
COPY bin/floe /floe
USER 65532:65532
VOLUME /data
# RPC (DRPC and Raft), gossip (TCP and UDP), HTTP (/readyz, /healthz).
EXPOSE 7700 7701 7701/udp 8080
ENTRYPOINT ["/floe"]
CMD ["--help"]
