# An S3 server for the compose cluster: Versity's S3 gateway over a posix
# folder, built on the host as a static binary (deploy/build.sh:
# CGO_ENABLED=0 go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)
# and copied into an empty image.
FROM scratch
COPY --chown=65532:65532 bin/rootfs/ /
COPY bin/versitygw /versitygw
USER 65532:65532
VOLUME /data
EXPOSE 7070
ENTRYPOINT ["/versitygw"]
