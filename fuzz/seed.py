#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from the MLF corpus (default ../../shared/mlf-corpus).

Usage: python3 fuzz/seed.py [CORPUS_DIR]
Writes only below fuzz/corpus/ (gitignored): the corpus is never committed.
"""
import hashlib
import io
import pathlib
import sys
import tarfile

FUZZ = pathlib.Path(__file__).resolve().parent
CORPUS = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else FUZZ.parent.parent / "shared" / "mlf-corpus"
OUT = FUZZ / "corpus"
# Whole-archive seeds drop members above this size so the fuzzer stays fast.
MAX_MEMBER = 256 << 10


def target_for(path):
    """Which per-file target a member of an archive seeds, if any."""
    name = path.rsplit("/", 1)[-1]
    if name == "metadata.json":
        return "metadata"
    if name.endswith(".params"):
        return "params"
    if name.endswith(".graph") or "graph/" in path and name.endswith(".json") or name == "graph.json":
        return "graph"
    if path.startswith("codegen/host/") and name.endswith((".h", ".c", ".cc", ".cpp")):
        return "sources"
    if name.endswith(".relay") or name == "relay.txt":
        return "relay"
    if path.startswith("codegen/host/lib/") and name.endswith(".o"):
        return "object"
    return None


def write(target, data):
    directory = OUT / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)


def members(case):
    """(relative path, bytes) of every regular file of a case's archive."""
    tar_path = case / "model.tar"
    if tar_path.is_file():
        with tarfile.open(tar_path) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    yield member.name.removeprefix("./"), tar.extractfile(member).read()
    elif (case / "model").is_dir():
        root = case / "model"
        for path in sorted(root.rglob("*")):
            if path.is_file() and ".git" not in path.parts:
                yield path.relative_to(root).as_posix(), path.read_bytes()


def small_tar(files):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in files:
            info = tarfile.TarInfo("./" + path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def memory_x_seeds():
    """memory.x files: a board's, and ones built to break a parser (nesting, stars, INCLUDE)."""
    board = (
        "MEMORY\n{\n  FLASH : ORIGIN = 0x08000000, LENGTH = 256K\n  RAM (rwx) : org = 0x20000000, len = 40K\n"
        "  SRAM2 : ORIGIN = ORIGIN(RAM) + LENGTH(RAM), LENGTH = 0x2000 - 4 * (2 + 2)\n}\n"
        "REGION_ALIAS(\"REGION_BSS\", RAM);\n_stack_start = ORIGIN(RAM) + LENGTH(RAM);\n"
        "SECTIONS\n{\n  .sram2 (NOLOAD) : ALIGN(4) { KEEP(*(.sram2 .sram2.*)) } > SRAM2 AT> FLASH\n"
        "  .ccm : { *(.ccm[a-c]?) } > RAM\n} INSERT AFTER .bss;\n"
    )
    region = "MEMORY {{\n RAM : ORIGIN = 0, LENGTH = {} \n}}\n"
    return [
        board,
        region.format("(" * 500 + "4K" + ")" * 500),
        region.format("-" * 1000 + "0"),
        region.format("-(" * 300),
        region.format("1 << 63 << 1"),
        board + "SECTIONS { .x : { *(." + "*a" * 120 + "b) } > RAM }\n",
        board + "SECTIONS { .x : { *(." + "*" * 300 + ") } }\n",
        board + "SECTIONS { .x : { *(.a[!b-" + "[" * 50 + ") } }\n",
        "INCLUDE other.x\n",
        "MEMORY {\n INCLUDE regions.x\n}\n",
        "SECTIONS {\n .x : { INCLUDE inputs.x }\n}\n",
    ]


def json_seeds():
    """JSON at the reader's edges: nesting at the limit, escapes, numbers of every kind."""
    return [
        "[" * 127 + "]" * 127,
        '{"a":' * 127 + "1" + "}" * 127,
        '"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\"\\\\"',
        "[0, -0, 1.0, -1.5e-7, 1e+20, 18446744073709551615, 18446744073709551616, -9223372036854775808, 5e-324]",
        '{"b": [true, false, null], "a": {}, "a": []}',
    ]


def main():
    cases = sorted(p.parent for p in CORPUS.glob("*/*/case.json"))
    if not cases:
        sys.exit(f"no cases under {CORPUS}")
    for case in cases:
        kept = []
        for path, data in members(case):
            target = target_for(path)
            if target:
                write(target, data)
            if target in ("metadata", "graph") and len(data) <= 65536:
                write("json", data)
            if target == "sources" and len(data) <= MAX_MEMBER:
                write("c_lexer", data)
                write("c_parser", data)
            if target == "object":
                # Machine code for the frame reader (the stack target reads it as Thumb and RISC-V).
                write("stack", data[:65536])
            if len(data) <= MAX_MEMBER and not path.startswith("runtime/"):
                kept.append((path, data))
        whole = small_tar(kept)
        write("archive", whole)
        write("front_end", whole)
    for seed in json_seeds():
        write("json", seed.encode())
    for seed in memory_x_seeds():
        write("memory_x", seed.encode())
    # Call graphs for the stack target: a chain through every function, and one closing into a cycle.
    chain = b"".join(i.to_bytes(2, "little") + (i + 1).to_bytes(2, "little") for i in range(4095))
    write("stack", chain)
    write("stack", chain + (4095).to_bytes(2, "little") + (0).to_bytes(2, "little"))
    # Slot images: the writer's own, which tests/fuzz_regressions.rs keeps
    # current (the format is not written a second time here).
    for path in sorted((FUZZ / "regressions" / "slot_header").iterdir()):
        write("slot_header", path.read_bytes())
    for target in sorted(p.name for p in OUT.iterdir()):
        print(f"{target}: {len(list((OUT / target).iterdir()))} seeds")


main()
