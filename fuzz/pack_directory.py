#!/usr/bin/env python3
"""Packs a directory's files into one fuzz input for the directory targets (fuzz_export,
fuzz_embeddings): entries of [1 byte: name length][name][4 bytes, little-endian: size][bytes],
as fuzz_common.h's write_directory reads them. Hidden files (the .gradcache-output stamp) are
left out.

    python3 fuzz/pack_directory.py DIR OUTPUT
"""
import os
import struct
import sys


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, output = sys.argv[1:]
    packed = b""
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if name.startswith(".") or not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        encoded = name.encode()
        if len(encoded) > 255:
            sys.exit(f"{name}: a name of over 255 bytes")
        packed += bytes([len(encoded)]) + encoded + struct.pack("<I", len(data)) + data
    with open(output, "wb") as out:
        out.write(packed)


if __name__ == "__main__":
    main()
