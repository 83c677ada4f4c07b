#!/usr/bin/env bash
# Regenerates the seed corpus under fuzz/corpus/<target>/ (files named seed-*):
# - every wire vector in phux-proto/testdata/vectors.md, one frame per file, plus a few
#   streams of several vectors back to back (for the chunked FrameDecoder);
# - every client frame of the conformance transcripts (conformance/transcripts/**/*.phuxt,
#   when they exist): `c1 > FRAME{...}` lines through `phux-conformance wire encode`, and
#   `c1 > raw 00 01 ...` lines as their bytes;
# - for the structure-aware targets, the same bytes and a few fixed pseudo-random inputs
#   (the `arbitrary` decoding turns any bytes into a value; the fuzzer does the rest).
# Files other than seed-* (inputs the fuzzer found and `cargo fuzz cmin` kept) are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=fuzz/corpus
targets=(frame_decode frame_roundtrip command_decode server_engine ledger_model lease_model input_encoder)
for t in "${targets[@]}"; do
    mkdir -p "$corpus/$t"
    find "$corpus/$t" -name 'seed-*' -delete
done

# write_hex <target> <name> <hex>
write_hex() {
    printf '%s' "$3" | tr -d ' \n' | xxd -r -p > "$corpus/$1/seed-$2"
}

# 1. Wire vectors: the line after each ``` fence is one frame in hex.
mapfile -t vectors < <(awk '/^```$/ { getline; if ($0 ~ /^[0-9a-f]+$/) print }' \
    phux-proto/testdata/vectors.md)
n=0
for hex in "${vectors[@]}"; do
    n=$((n + 1))
    name=$(printf 'vector-%03d' "$n")
    write_hex frame_decode "$name" "$hex"
    write_hex frame_roundtrip "$name" "$hex"
    # COMMAND frames (type 0x31): their bodies seed command_decode.
    if [ "${hex:8:2}" = "31" ]; then
        write_hex command_decode "$name" "${hex:10}"
    fi
done
# Streams: eight consecutive vectors per file.
for ((i = 0; i < ${#vectors[@]}; i += 8)); do
    write_hex frame_decode "$(printf 'stream-%03d' "$i")" "$(printf '%s' "${vectors[@]:i:8}")"
done
echo "vectors: ${#vectors[@]} frames"

# 2. Conformance transcripts, when present.
transcripts=()
if [ -d conformance/transcripts ]; then
    mapfile -t transcripts < <(find conformance/transcripts -name '*.phuxt' | sort)
fi
if [ "${#transcripts[@]}" -gt 0 ]; then
    cargo build -q -p phux-conformance
    cli=target/debug/phux-conformance
    m=0
    for file in "${transcripts[@]}"; do
        stream=""
        while IFS= read -r line; do
            # Only frames a client sends: `c<N> > ...`. Patterns ($x, *) do not encode; skip.
            [[ "$line" =~ ^c[0-9]+\ \>\ (.*)$ ]] || continue
            frame="${BASH_REMATCH[1]}"
            if [[ "$frame" =~ ^raw\ (.*)$ ]]; then
                hex="${BASH_REMATCH[1]}"
            elif ! hex=$("$cli" wire encode "$frame" 2>/dev/null); then
                continue
            fi
            m=$((m + 1))
            write_hex frame_decode "$(printf 'transcript-%04d' "$m")" "$hex"
            stream+="$(printf '%s' "$hex" | tr -d ' ')"
        done < "$file"
        if [ -n "$stream" ]; then
            slug=$(basename "$file" .phuxt)
            area=$(basename "$(dirname "$file")")
            write_hex frame_decode "transcript-$area-$slug" "$stream"
            write_hex server_engine "transcript-$area-$slug" "$stream"
        fi
    done
    echo "transcripts: ${#transcripts[@]} files, $m client frames"
else
    echo "transcripts: none yet (conformance/transcripts/**/*.phuxt)"
fi

# 3. Fixed pseudo-random inputs for the structure-aware targets (a xorshift, seeded per
#    target and size, so the files never change between runs).
for t in frame_roundtrip command_decode server_engine ledger_model lease_model input_encoder; do
    for size in 16 64 256 1024 4096; do
        perl -e '
            my ($seed, $n) = @ARGV; my $x = $seed;
            for (1..$n) { $x ^= ($x << 13) & 0xffffffff; $x ^= $x >> 17;
                          $x ^= ($x << 5) & 0xffffffff; print chr($x & 0xff); }' \
            "$(( $(printf '%s' "$t" | cksum | cut -d' ' -f1) % 100000 + size ))" "$size" \
            > "$corpus/$t/seed-random-$size"
    done
done

for t in "${targets[@]}"; do
    printf '%-16s %4d files %8d bytes\n' "$t" "$(find "$corpus/$t" -type f | wc -l)" \
        "$(cat "$corpus/$t"/* | wc -c)"
done
