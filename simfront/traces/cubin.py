"""Launch attributes that are fixed at compile time, read from the cubins themselves.

A kernel's register count belongs to the compiled function, so it can be read from the
binary that holds it: a ``.cubin``, a host shared library with an embedded fatbin
(``selective_scan_cuda.so`` of mamba_ssm), or a wheel containing such libraries. This is
the record behind the register counts of the shipped selective-scan samples, whose
launches ncu did not profile.

Layout read here (no NVIDIA tool needed):

- host ELF section ``.nv_fatbin``: fatbin containers (magic ``0xBA55ED50``), each a list of
  entries with a header (kind 2 = cubin, SM version at offset 0x1c, flags at 0x28:
  ``0x2000`` LZ4-compressed, ``0x8000`` zstd-compressed, uncompressed size at 0x38);
- cubin ELF: the global ``.nv.info`` section holds ``EIATTR_REGCOUNT`` (0x2f) attributes,
  (symbol index, registers) pairs; ``.nv.shared.<kernel>`` sections hold static shared
  memory (on sm_80/sm_90 their size includes the driver's 1 KiB reserve).

Only zstd-compressed and uncompressed entries are read (what CUDA 12.8+ writes by
default); an LZ4 entry is reported, not guessed.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import zstandard

from simfront.core.errors import InputError

_FATBIN_MAGIC = 0xBA55ED50
_EIATTR_REGCOUNT = 0x2F
_FLAG_LZ4 = 0x2000
_FLAG_ZSTD = 0x8000
_EM_CUDA = 190


@dataclass(frozen=True)
class CubinKernel:
    name: str            # mangled
    regs: int
    sm: int              # SM version of the cubin (90 for sm_90)
    shared_section: int  # size of .nv.shared.<name> (static shared + reserve), 0 if none
    origin: str          # where it was read: file and fatbin entry


def _sections(elf: bytes) -> tuple[list[tuple], list[bytes]]:
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not a 64-bit ELF")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx][4]
    names = [elf[strtab + s[0]: elf.index(b"\0", strtab + s[0])] for s in secs]
    return secs, names


def _nv_info_regs(elf: bytes, sec: tuple) -> dict[int, int]:
    """EIATTR_REGCOUNT of a .nv.info section: symbol index -> registers."""
    off, end = sec[4], sec[4] + sec[5]
    regs = {}
    while off + 2 <= end:
        fmt, attr = elf[off], elf[off + 1]
        off += 2
        if fmt == 1:
            continue
        if fmt == 2:
            off += 1
        elif fmt == 3:
            off += 2
        elif fmt == 4:
            size, = struct.unpack_from("<H", elf, off)
            if attr == _EIATTR_REGCOUNT and size == 8:
                sym, n = struct.unpack_from("<II", elf, off + 2)
                regs[sym] = n
            off += 2 + size
        else:
            break  # an attribute format this reader does not know: stop, do not guess
    return regs


def cubin_kernels(elf: bytes, origin: str = "") -> list[CubinKernel]:
    """The kernels of one cubin with their register counts."""
    secs, names = _sections(elf)
    e_flags, = struct.unpack_from("<I", elf, 0x30)
    # e_flags holds the SM: in its low byte up to ELF ABI version 7, in the next from 8
    sm = (e_flags >> 8) & 0xFF if elf[8] >= 8 else e_flags & 0xFF
    if b".symtab" not in names or b".nv.info" not in names:
        return []
    symtab = secs[names.index(b".symtab")]
    strtab = secs[symtab[6]][4]
    symbols = []
    for k in range(symtab[5] // 24):
        st_name, = struct.unpack_from("<I", elf, symtab[4] + k * 24)
        symbols.append(elf[strtab + st_name: elf.index(b"\0", strtab + st_name)])
    regs = _nv_info_regs(elf, secs[names.index(b".nv.info")])
    shared = {n[len(b".nv.shared."):]: s[5] for n, s in zip(names, secs)
              if n.startswith(b".nv.shared.")}
    out = []
    for idx, n in regs.items():
        if idx < len(symbols):
            name = symbols[idx]
            out.append(CubinKernel(name.decode(errors="replace"), n, sm, shared.get(name, 0),
                                   origin))
    return out


def _fatbin_cubins(host: bytes, origin: str) -> Iterator[tuple[bytes, str]]:
    secs, names = _sections(host)
    if b".nv_fatbin" not in names:
        return
    sec = secs[names.index(b".nv_fatbin")]
    fb = host[sec[4]: sec[4] + sec[5]]
    p, n = 0, 0
    while p + 16 <= len(fb):
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", fb, p)
        if magic != _FATBIN_MAGIC:
            break
        q, end = p + hsize, p + hsize + fsize
        while q + 16 <= end:
            kind, _v, ehsize, payload = struct.unpack_from("<HHIQ", fb, q)
            if kind == 2 and ehsize >= 0x40:
                csize, = struct.unpack_from("<Q", fb, q + 0x10)
                flags, = struct.unpack_from("<Q", fb, q + 0x28)
                usize, = struct.unpack_from("<Q", fb, q + 0x38)
                body = fb[q + ehsize: q + ehsize + (csize or payload)]
                where = f"{origin} fatbin entry {n}"
                if flags & _FLAG_ZSTD:
                    body = zstandard.ZstdDecompressor().decompress(body, max_output_size=usize)
                elif flags & _FLAG_LZ4:
                    raise InputError(f"{where} is LZ4-compressed, which this reader does "
                                     "not decompress", origin)
                yield body, where
            n += 1
            q += ehsize + payload
        p = end


def read_kernels(path: str | Path) -> list[CubinKernel]:
    """Kernels with register counts from a ``.cubin``, a shared library with an embedded
    fatbin, or a wheel (every ``.so`` inside)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("binary not found", path)
    out: list[CubinKernel] = []
    blobs: list[tuple[bytes, str]] = []
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            blobs = [(z.read(i), f"{path.name}:{i.filename}") for i in z.infolist()
                     if i.filename.endswith(".so")]
    else:
        blobs = [(path.read_bytes(), path.name)]
    try:
        for data, origin in blobs:
            if struct.unpack_from("<H", data, 0x12)[0] == _EM_CUDA:
                out += cubin_kernels(data, origin)  # a cubin itself
            else:
                for cubin, where in _fatbin_cubins(data, origin):
                    out += cubin_kernels(cubin, where)
    except (ValueError, struct.error, IndexError) as exc:
        raise InputError(f"cannot read as ELF/fatbin ({exc})", path) from None
    return out
