#!/usr/bin/env bash
# Builds the static binaries and the container images of the compose
# cluster (deploy/compose.yaml), with nothing pulled: both images are FROM
# scratch with a binary built here.
#
#   deploy/build.sh            # floe:dev and floe-versitygw:v1.8.0
#   FLOE_TAG=x deploy/build.sh # floe:x
#   FLOE_VERSION=v1.0.0 ...    # the version floe --version prints (default: git describe)
#
# versitygw is built once into bin/versitygw (go install through the Go
# module proxy) and reused while its version stays the same.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${FLOE_TAG:-dev}
vgw_version=v1.8.0

mkdir -p bin/rootfs/data bin/rootfs/tmp
chmod 1777 bin/rootfs/tmp

# floe --version says what was built: -trimpath and a build without .git
# (or with -buildvcs=false) stamp no revision of their own.
version=${FLOE_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
revision=$(git rev-parse HEAD 2>/dev/null || true)
echo "building bin/floe $version (static)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=$version -X main.revision=$revision" -o bin/floe ./cmd/floe

if [ "$(cat bin/versitygw.version 2>/dev/null)" != "$vgw_version" ] || [ ! -x bin/versitygw ]; then
  echo "building bin/versitygw $vgw_version (static)" >&2
  CGO_ENABLED=0 GOBIN="$PWD/bin" go install -trimpath -ldflags='-s -w' \
    "github.com/versity/versitygw/cmd/versitygw@$vgw_version"
  echo "$vgw_version" > bin/versitygw.version
fi

for b in bin/floe bin/versitygw; do
  # A dynamically linked binary would not start in an empty image.
  if command -v file >/dev/null && ! file "$b" | grep -q 'statically linked'; then
    echo "build.sh: $b is not statically linked" >&2
    exit 1
  fi
done

docker build -q -t "floe:$tag" -f Dockerfile . >/dev/null
docker build -q -t "floe-versitygw:$vgw_version" -f deploy/versitygw.Dockerfile . >/dev/null
echo "built floe:$tag and floe-versitygw:$vgw_version" >&2
