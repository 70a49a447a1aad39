"""Mutations of a checkpoint tree for fuzzing the reader (hypothesis strategies + appliers).

A mutation is a small frozen record naming a path relative to the tree's root; ``apply``
performs it on a *copy* of a checkpoint. Some mutations are *detectable*: the file they hit
is one the reader must parse, so a finding naming exactly that path is required
(:func:`expected_findings`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

AS_ROOT = os.geteuid() == 0

KINDS = (
    "truncate",  # cut the file to a fraction of its length
    "empty",  # cut the file to 0 bytes
    "flip",  # xor some bytes
    "delete",  # remove a file or folder
    "extra",  # a new file in a folder
    "version",  # replace the "vN" header line
    "huge",  # replace a number by a huge / negative / non-finite one
    "nest",  # replace a JSON line by deeply nested JSON
    "enormous",  # append an enormous JSON line
    "binary",  # replace the content by binary garbage (NUL bytes)
    "fifo",  # a FIFO where a file is expected (open() of it would block)
    "dir_for_file",  # a folder where a file is expected
    "file_for_dir",  # a file where a folder is expected
    "symlink_loop",  # the path becomes a symlink to itself
    "dir_loop",  # a symlink to an ancestor folder inside a folder
    "dangling",  # a symlink to nothing
    "chmod000",  # unreadable permissions (only when not root: root reads anyway)
)


@dataclass(frozen=True)
class Mutation:
    kind: str
    rel: str  # path relative to the tree's root ("" = root)
    arg: object = None

    def __str__(self) -> str:
        return f"{self.kind}({self.rel!r}{'' if self.arg is None else ', ' + repr(self.arg)[:60]})"


def inventory(root: Path) -> tuple[list[str], list[str]]:
    """(regular files, folders) under ``root``, relative, sorted; symlinks are not followed."""
    files, dirs = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            dirs.append(os.path.relpath(os.path.join(dirpath, d), root))
        for f in filenames:
            p = os.path.join(dirpath, f)
            if os.path.isfile(p) and not os.path.islink(p):
                files.append(os.path.relpath(p, root))
    return sorted(files), sorted(dirs)


_NAMES = st.one_of(
    st.sampled_from(["junk", "7", "00012", "-1", "3.compact", ".4.crc", ".5.0b1c.tmp", "99999999999999999999", "metadata", "x" * 200, "ü✓", " ", "_spark_metadata", "SSTs", "12.zip", "1.delta"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=30).filter(lambda s: s not in (".", "..")),
)
_HUGE = st.sampled_from([b"99999999999999999999999999", b"-99999999999999999999", b"9223372036854775807", b"-9223372036854775808", b"18446744073709551616", b"1e400", b"-1e400", b"1e-400", b"-1", b"0", b"253402300800000", b"NaN", b"1.5"])
_HEADERS = st.sampled_from([b"v99", b"v0", b"v-1", b"v" + b"9" * 40, b"V1", b"v", b"v1.0", b"v2", b"v3", b"", b"\xff\xfe", b"{\"v\":1}"])


@st.composite
def mutation(draw, files: list[str], dirs: list[str]) -> Mutation:
    kinds = [k for k in KINDS if k != "chmod000" or not AS_ROOT]
    kind = draw(st.sampled_from(kinds))
    any_file = st.sampled_from(files) if files else st.just("metadata")
    any_dir = st.sampled_from(["", *dirs])
    if kind == "truncate":
        return Mutation(kind, draw(any_file), draw(st.floats(0.0, 0.999)))
    if kind == "flip":
        return Mutation(kind, draw(any_file), tuple(draw(st.lists(st.tuples(st.floats(0, 0.999), st.integers(1, 255)), min_size=1, max_size=4))))
    if kind == "delete":
        return Mutation(kind, draw(st.one_of(any_file, st.sampled_from(dirs) if dirs else any_file)))
    if kind == "extra":
        return Mutation(kind, os.path.join(draw(any_dir), draw(_NAMES)), draw(st.binary(max_size=200)))
    if kind == "version":
        return Mutation(kind, draw(any_file), draw(_HEADERS))
    if kind == "huge":
        return Mutation(kind, draw(any_file), (draw(_HUGE), draw(st.integers(0, 20))))
    if kind == "nest":
        return Mutation(kind, draw(any_file), (draw(st.integers(1, 100_000)), draw(st.booleans())))
    if kind == "enormous":
        return Mutation(kind, draw(any_file), (draw(st.sampled_from(["string", "keys", "array"])), draw(st.integers(1, 3 << 20))))
    if kind == "binary":
        return Mutation(kind, draw(any_file), draw(st.binary(min_size=1, max_size=300)))
    if kind == "file_for_dir":
        return Mutation(kind, draw(st.sampled_from(dirs) if dirs else st.just("offsets")), draw(st.binary(max_size=50)))
    if kind == "dir_loop":
        return Mutation(kind, os.path.join(draw(any_dir), draw(st.sampled_from(["loop", "7", "0", "SSTs", "_metadata"]))), draw(st.integers(0, 3)))
    if kind == "dangling":
        return Mutation(kind, draw(st.one_of(any_file, st.just(os.path.join(draw(any_dir), "dangling")))))
    return Mutation(kind, draw(any_file))  # empty, fifo, dir_for_file, symlink_loop, chmod000


def mutations(files: list[str], dirs: list[str], max_size: int = 4):
    return st.lists(mutation(files, dirs), min_size=1, max_size=max_size)


def _remove(p: Path) -> None:
    if p.is_symlink() or not p.exists():
        if p.is_symlink():
            p.unlink()
        return
    if p.is_dir():
        shutil.rmtree(p)
    else:
        p.unlink()


def _truncate(p: Path, m: Mutation) -> bool:
    data = p.read_bytes()
    p.write_bytes(data[: int(len(data) * m.arg)])
    return True


def _empty(p: Path, m: Mutation) -> bool:
    p.write_bytes(b"")
    return True


def _flip(p: Path, m: Mutation) -> bool:
    data = bytearray(p.read_bytes())
    if not data:
        return False
    for frac, x in m.arg:
        i = int(len(data) * frac)
        data[i] ^= x
    p.write_bytes(bytes(data))
    return True


def _delete(p: Path, m: Mutation) -> bool:
    if not (p.exists() or p.is_symlink()):
        return False
    _remove(p)
    return True


def _extra(p: Path, m: Mutation) -> bool:
    if p.exists() or p.is_symlink():
        return False
    p.write_bytes(m.arg)
    return True


def _version(p: Path, m: Mutation) -> bool:
    data = p.read_bytes()
    _, nl, rest = data.partition(b"\n")
    p.write_bytes(m.arg + b"\n" + rest if nl else m.arg)
    return True


def _huge(p: Path, m: Mutation) -> bool:
    value, nth = m.arg
    data = p.read_bytes()
    nums = list(re.finditer(rb"-?\d+", data))
    if not nums:
        return False
    n = nums[nth % len(nums)]
    p.write_bytes(data[: n.start()] + value + data[n.end() :])
    return True


def _nest(p: Path, m: Mutation) -> bool:
    depth, as_meta = m.arg
    inner = b"[" * depth + b"]" * depth
    line = b'{"batchWatermarkMs":0,"conf":' + (b"{\"x\":" * depth + b"1" + b"}" * depth) + b"}" if as_meta else inner
    lines = p.read_bytes().split(b"\n")
    i = 1 if len(lines) > 1 and lines[0].startswith(b"v") else 0
    lines[i:i + 1] = [line]
    p.write_bytes(b"\n".join(lines))
    return True


def _enormous(p: Path, m: Mutation) -> bool:
    shape, size = m.arg
    if shape == "string":
        line = b'{"path":"' + b"a" * size + b'","timestamp":1,"batchId":0}'
    elif shape == "keys":
        line = b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(size // 12)) + b"}"
    else:
        line = b"[" + b",".join([b"1"] * (size // 2)) + b"]"
    with open(p, "ab") as fh:
        fh.write(b"\n" + line)
    return True


def _binary(p: Path, m: Mutation) -> bool:
    p.write_bytes(b"\x00" + m.arg)
    return True


def _fifo(p: Path, m: Mutation) -> bool:
    p.unlink()
    os.mkfifo(p)
    return True


def _dir_for_file(p: Path, m: Mutation) -> bool:
    p.unlink()
    p.mkdir()
    (p / "inner").write_bytes(b"v1\n{}")
    return True


def _file_for_dir(p: Path, m: Mutation) -> bool:
    if not p.is_dir() or p.is_symlink():
        return False
    shutil.rmtree(p)
    p.write_bytes(m.arg)
    return True


def _symlink_loop(p: Path, m: Mutation) -> bool:
    p.unlink()
    os.symlink(p.name, p)
    return True


def _dir_loop(p: Path, m: Mutation) -> bool:
    if p.exists() or p.is_symlink():
        return False
    up = min(m.arg, len(Path(m.rel).parts) - 1)
    os.symlink("." if up == 0 else "/".join([".."] * up), p)
    return True


def _dangling(p: Path, m: Mutation) -> bool:
    if p.exists() or p.is_symlink():
        _remove(p)
    os.symlink("does-not-exist", p)
    return True


def _chmod000(p: Path, m: Mutation) -> bool:
    os.chmod(p, 0)
    return True


#: kind → how it changes the path; each returns False when the path does not suit it
_APPLY: dict[str, Callable[[Path, Mutation], bool]] = {
    "truncate": _truncate, "empty": _empty, "flip": _flip, "delete": _delete, "extra": _extra,
    "version": _version, "huge": _huge, "nest": _nest, "enormous": _enormous, "binary": _binary,
    "fifo": _fifo, "dir_for_file": _dir_for_file, "file_for_dir": _file_for_dir,
    "symlink_loop": _symlink_loop, "dir_loop": _dir_loop, "dangling": _dangling, "chmod000": _chmod000,
}


def apply(root: Path, m: Mutation) -> bool:
    """Apply ``m`` under ``root``; False when it does not apply (its path vanished or is not a
    regular file any more because of an earlier mutation)."""
    p = root / m.rel
    if m.kind in ("extra", "dir_loop", "dangling") and not p.parent.is_dir():
        return False
    if (m.kind not in ("extra", "dir_loop", "dangling", "delete", "file_for_dir")
            and (p.is_symlink() or not p.is_file())):
        return False
    try:
        p.parent.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return _APPLY[m.kind](p, m)


# --- which files the reader must parse, and what it must say about them ----------------------

_LOG_FILE = re.compile(r"^(\d+)(\.compact)?$")
#: Mutations that make a parsed file certainly invalid, and the codes allowed for them.
DETECTABLE = {
    "empty": {"empty-file", "unparsable-file"},
    "binary": {"unparsable-file", "empty-file"},
    "fifo": {"unreadable-file"},
    "dir_for_file": {"unreadable-file", "unparsable-file", "stray-file"},
    "symlink_loop": {"unreadable-file"},
    "chmod000": {"unreadable-file"},
}


def parsed_files(root: Path, files: list[str]) -> set[str]:
    """Files of the pristine tree that ``read_checkpoint(full=True)`` must parse: ``metadata``,
    every ``offsets/N`` and ``commits/N``, and in each ``sources/<i>/`` the latest ``.compact``
    and the batches after it."""
    out = {"metadata"} & set(files)
    for f in files:
        parts = Path(f).parts
        if len(parts) == 2 and parts[0] in ("offsets", "commits") and parts[1].isdigit():
            out.add(f)
    logs: dict[str, list[tuple[int, bool, str]]] = {}
    for f in files:
        parts = Path(f).parts
        if len(parts) == 3 and parts[0] == "sources" and parts[1].isdigit():
            m = _LOG_FILE.match(parts[2])
            if m:
                logs.setdefault(parts[1], []).append((int(m.group(1)), bool(m.group(2)), f))
    for entries in logs.values():
        compacts = [b for b, c, _ in entries if c]
        start = max(compacts) if compacts else min(b for b, _, _ in entries)
        chosen: dict[int, tuple[bool, str]] = {}
        for b, c, f in entries:
            if b >= start and (b not in chosen or c):
                chosen[b] = (c, f)
        out.update(f for _, f in chosen.values())
    return out


def expected_findings(applied: list[Mutation], must_parse: set[str], cp_rel: str = "") -> dict[str, set[str]]:
    """Path (relative to the tree) → finding codes of which one must name it, for the
    detectable mutations not undone by a later mutation of the same path or of one of its
    folders, plus stray files added at the checkpoint's root (``cp_rel`` in the tree) or in
    its ``offsets/``/``commits/``."""
    out: dict[str, set[str]] = {}
    for i, m in enumerate(applied):
        later = applied[i + 1 :]
        if any(m.rel == n.rel or m.rel.startswith(n.rel.rstrip("/") + "/") or n.rel == "" for n in later):
            continue
        if m.kind in DETECTABLE and m.rel in must_parse:
            out[m.rel] = DETECTABLE[m.kind]
        elif m.kind == "version" and m.rel in must_parse and m.arg not in (b"v1", b"v2") \
                and not (m.arg == b"v3" and os.path.basename(os.path.dirname(m.rel)) == "commits"):  # commit log v3: Spark 4.2+
            out[m.rel] = {"unknown-log-version", "unparsable-file", "empty-file"}
        elif m.kind == "extra":
            parent, name = os.path.split(m.rel)
            if cp_rel:
                if parent != cp_rel and not parent.startswith(cp_rel + "/"):
                    continue
                parent = "" if parent == cp_rel else parent[len(cp_rel) + 1 :]
            if parent in ("", "offsets", "commits") and not name.isdigit() and not (name.startswith(".") and (name.endswith(".crc") or name.endswith(".tmp"))) and not (parent == "" and name in ("metadata", "offsets", "commits", "sources", "state")):
                out[m.rel] = {"stray-file"}
    return out
