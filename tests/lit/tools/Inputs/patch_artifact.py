"""Damages a tcc artifact (.tcc) or checkpoint (.tcckpt) in one chosen way,
keeping everything else valid, so that a test sees the one error it is after.

  patch_artifact.py MODE IN OUT

Both formats: a 64-byte header (magic, u32 version at 8, u64 manifest size
at 16, u64 blob size at 24, u32 CRC-32 at 32), the JSON manifest, padding
to 64 bytes, the blob. The artifact's CRC-32 covers manifest and blob; a
rewritten manifest gets a recomputed one, so only the intended check fails.

Modes:
  version N        header version N (the CRC does not cover the header)
  magic            first byte changed
  truncate N       keep the first N bytes
  trailing         one byte appended
  json             an artifact manifest that is not JSON (valid CRC)
  format           an artifact manifest whose "format" is another file's
  missing-field    an artifact manifest without "programs"
  kernel           the first train_step instruction names an unknown kernel
  iattrs           the first train_step matmul gets an extra int attribute
  meta KEY=VALUE   an artifact's meta entry set
  no-onnx          an artifact without its ONNX model (for --export)
  rename-program A=B  program A (and its temporaries) renamed to B
  no-inputs P      program P lists no inputs (its instrs still read them)
"""
import json
import struct
import sys
import zlib


def align(n):
    return (n + 63) // 64 * 64


def split(data):
    m, b = struct.unpack_from("<QQ", data, 16)
    start = align(64 + m)
    return data[:64], data[64:64 + m], data[start:start + b]


def join(header, manifest, blob):
    header = bytearray(header)
    struct.pack_into("<QQ", header, 16, len(manifest), len(blob))
    struct.pack_into("<I", header, 32, zlib.crc32(manifest + blob) & 0xFFFFFFFF)
    pad = align(64 + len(manifest)) - 64 - len(manifest)
    return bytes(header) + manifest + b"\0" * pad + blob


def main():
    mode, src, dst = sys.argv[1], sys.argv[-2], sys.argv[-1]
    data = bytearray(open(src, "rb").read())
    if mode == "version":
        struct.pack_into("<I", data, 8, int(sys.argv[2]))
    elif mode == "magic":
        data[0] ^= 0x20
    elif mode == "truncate":
        data = data[:int(sys.argv[2])]
    elif mode == "trailing":
        data += b"\0"
    else:
        header, manifest, blob = split(bytes(data))
        if mode == "json":
            manifest = b"{not json"
        else:
            j = json.loads(manifest)
            if mode == "format":
                j["format"] = "tcc-checkpoint"
            elif mode == "missing-field":
                del j["programs"]
            elif mode == "meta":
                key, value = sys.argv[2].split("=", 1)
                j["meta"][key] = value
            elif mode == "no-onnx":
                del j["onnx"]
            elif mode == "rename-program":
                old, new = sys.argv[2].split("=", 1)
                for p in j["programs"]:
                    if p["name"] == old:
                        p["name"] = new
                for t in j["tensors"]:
                    if t.get("program") == old:
                        t["program"] = new
            elif mode == "no-inputs":
                for p in j["programs"]:
                    if p["name"] == sys.argv[2]:
                        p["inputs"] = []
            elif mode in ("kernel", "iattrs"):
                step = next(p for p in j["programs"] if p["name"] == "train_step")
                if mode == "kernel":
                    step["instrs"][0]["k"] = "no_such_kernel"
                else:
                    mm = next(i for i in step["instrs"] if i["k"] == "matmul")
                    mm["i"] = mm.get("i", []) + [7]
            else:
                sys.exit("unknown mode " + mode)
            manifest = json.dumps(j).encode()
        data = join(header, manifest, blob)
    open(dst, "wb").write(bytes(data))


if __name__ == "__main__":
    main()
