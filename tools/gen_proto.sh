#!/usr/bin/env bash
# Regenerates pulsar_common/wire/pulsar_api_pb2.py (+ .pyi) from pulsar_api.proto.
#
# The generated module is committed, so only developers who change the .proto
# run this. protoc stamps its own version into the generated code, and the
# protobuf runtime refuses code stamped newer than itself: the project accepts
# protobuf >= 5.28, so we generate with a protoc older than that (libprotoc 27.x,
# shipped in grpcio-tools 1.66.x). That grpcio-tools pins protobuf < 6, which
# must not leak into the project's virtualenv, so it lives in a private one.
set -euo pipefail

GRPCIO_TOOLS_VERSION="${GRPCIO_TOOLS_VERSION:-1.66.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC_ROOT="$ROOT/services/common"
PROTO="pulsar_common/wire/pulsar_api.proto"
VENV="${PROTOC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/pulsar-py/protoc-venv-$GRPCIO_TOOLS_VERSION}"
PYTHON="${PYTHON:-python3}"

if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "grpcio-tools==$GRPCIO_TOOLS_VERSION"
fi

cd "$SRC_ROOT"
"$VENV/bin/python" -m grpc_tools.protoc \
    --proto_path=. \
    --python_out=. \
    --pyi_out=. \
    "$PROTO"

# Schema.Type has a value named None: legal in protobuf, a syntax error in a
# stub. Drop those two stub lines (the value stays reachable as
# Schema.Type.Value("None")) so mypy can read the stub.
sed -i -E '/^ +None: (_ClassVar\[)?Schema\.Type\]?$/d' "${PROTO%.proto}_pb2.pyi"

# The stub is generated code: keep mypy --strict from judging its style
# (it still uses it for types).
sed -i '1i # mypy: ignore-errors' "${PROTO%.proto}_pb2.pyi"

echo "generated: $SRC_ROOT/${PROTO%.proto}_pb2.py and ${PROTO%.proto}_pb2.pyi"
"$VENV/bin/python" -m grpc_tools.protoc --version
