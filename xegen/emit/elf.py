"""A small ELF64 little-endian reader and writer: sections, symbols and notes.

Only what zebins use: section headers (no program headers), a section-name string table,
a symbol table and SHT_NOTE sections.  The reader checks every offset and size against
the file and raises `DecodeError` naming the byte offset of what is wrong; the writer
lays sections out in the order given, so its output depends on nothing but its input.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import DecodeError

# e_ident and header constants (System V ABI).
MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1
ET_REL = 1

# Section types and flags used here.
SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_RELA = 4
SHT_REL = 9
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4

# Symbol binding and type (st_info = binding << 4 | type).
STB_LOCAL = 0
STB_GLOBAL = 1
STT_NOTYPE = 0
STT_FUNC = 2

FILE_HEADER = struct.Struct("<4sBBBBB7sHHIQQQIHHHHHH")  # 64 bytes
SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")  # 64 bytes
SYMBOL = struct.Struct("<IBBHQQ")  # 24 bytes
REL = struct.Struct("<QQ")  # r_offset, r_info (symbol << 32 | type)
RELA = struct.Struct("<QQq")  # ... and r_addend
NOTE_HEADER = struct.Struct("<III")  # namesz, descsz, type


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    data: bytes = b""
    flags: int = 0
    link: int = 0  # section index (e.g. a symbol table's string table)
    info: int = 0
    alignment: int = 1
    entry_size: int = 0
    offset: int = 0  # where the data sits in the file (reader only; the writer recomputes it)


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int = 0
    size: int = 0
    section_index: int = 0
    binding: int = STB_LOCAL
    type: int = STT_NOTYPE
    other: int = 0


@dataclass(frozen=True)
class Note:
    owner: str
    type: int
    descriptor: bytes


@dataclass(frozen=True)
class ElfFile:
    sections: tuple[Section, ...]  # section 0 is the NULL section
    machine: int
    type: int = ET_REL
    abi_version: int = 0
    os_abi: int = 0
    flags: int = 0
    section_names_index: int = 0  # e_shstrndx

    def section(self, name: str) -> Section | None:
        for section in self.sections:
            if section.name == name:
                return section
        return None

    def index_of(self, name: str) -> int | None:
        for index, section in enumerate(self.sections):
            if section.name == name:
                return index
        return None


# --- Reading -----------------------------------------------------------------------------


def read_elf(data: bytes) -> ElfFile:
    """Parse an ELF64 LSB file's header and sections; DecodeError names the bad offset."""
    data = bytes(data)
    if len(data) < FILE_HEADER.size:
        raise DecodeError(f"truncated ELF header: the file has {len(data)} bytes, the header needs 64", len(data))
    (
        magic,
        file_class,
        encoding,
        version,
        os_abi,
        abi_version,
        _pad,
        file_type,
        machine,
        _e_version,
        _entry,
        program_headers,
        section_headers,
        flags,
        header_size,
        _ph_size,
        _ph_count,
        section_header_size,
        section_count,
        names_index,
    ) = FILE_HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise DecodeError(f"not an ELF file: magic is {magic!r}, expected {MAGIC!r}", 0)
    if file_class != ELFCLASS64:
        raise DecodeError(f"ELF class {file_class} is not ELFCLASS64 (2): zebins are 64-bit ELF", 4)
    if encoding != ELFDATA2LSB:
        raise DecodeError(f"ELF data encoding {encoding} is not little-endian (1)", 5)
    if version != EV_CURRENT:
        raise DecodeError(f"ELF identification version {version} is not 1", 6)
    if header_size != FILE_HEADER.size:
        raise DecodeError(f"ELF header size field is {header_size}, expected 64", 52)
    if section_headers == 0:
        return ElfFile((), machine, file_type, abi_version, os_abi, flags, 0)
    if section_header_size != SECTION_HEADER.size:
        raise DecodeError(f"section header size field is {section_header_size}, expected 64", 58)
    if section_count == 0:
        # Extended numbering: the real count sits in section 0's sh_size.
        _check_range(data, section_headers, SECTION_HEADER.size, "section header 0")
        section_count = SECTION_HEADER.unpack_from(data, section_headers)[5]
    _check_range(data, section_headers, section_count * SECTION_HEADER.size, f"{section_count} section headers")

    raw_headers = [
        SECTION_HEADER.unpack_from(data, section_headers + i * SECTION_HEADER.size) for i in range(section_count)
    ]
    if names_index >= section_count:
        raise DecodeError(f"section-name table index {names_index} is not below the section count {section_count}", 62)
    names_header_offset = section_headers + names_index * SECTION_HEADER.size
    names = _section_data(data, raw_headers[names_index], names_header_offset, f"section {names_index}")

    sections = []
    for index, header in enumerate(raw_headers):
        name_offset, sh_type, sh_flags, _address, offset, _size, link, info, align, entsize = header
        header_offset = section_headers + index * SECTION_HEADER.size
        if index == 0 and sh_type == SHT_NULL:
            sections.append(Section("", SHT_NULL))
            continue
        name = _string(names, name_offset, names_header_offset, f"name of section {index}")
        payload = _section_data(data, header, header_offset, f"section {index} ({name})")
        sections.append(Section(name, sh_type, payload, sh_flags, link, info, align, entsize, offset))
    return ElfFile(tuple(sections), machine, file_type, abi_version, os_abi, flags, names_index)


def _check_range(data: bytes, offset: int, size: int, what: str) -> None:
    if offset + size > len(data):
        raise DecodeError(
            f"{what} ({size} bytes at offset {offset}) run past the end of the {len(data)}-byte file",
            min(offset, len(data)),
        )


def _section_data(data: bytes, header: tuple, header_offset: int, what: str) -> bytes:
    sh_type, offset, size = header[1], header[4], header[5]
    if sh_type in (SHT_NULL, SHT_NOBITS):
        return b""
    if offset + size > len(data):
        raise DecodeError(
            f"{what} claims {size} bytes at offset {offset}, past the end of the {len(data)}-byte file", header_offset
        )
    return data[offset : offset + size]


def _string(table: bytes, offset: int, where: int, what: str) -> str:
    if offset >= len(table) and not (offset == 0 and not table):
        raise DecodeError(f"{what}: string offset {offset} is outside the {len(table)}-byte string table", where)
    end = table.find(b"\0", offset)
    if end < 0:
        raise DecodeError(f"{what}: the string at offset {offset} is not NUL-terminated", where)
    try:
        return table[offset:end].decode("utf-8")
    except UnicodeDecodeError as error:
        raise DecodeError(f"{what}: the string at offset {offset} is not UTF-8 ({error.reason})", where) from None


def read_symbols(elf: ElfFile, symbol_table: Section) -> tuple[Symbol, ...]:
    """The symbols of a SHT_SYMTAB section, names resolved through its linked string table."""
    if symbol_table.link >= len(elf.sections):
        raise DecodeError(
            f"{symbol_table.name} links to string table {symbol_table.link}, which does not exist", symbol_table.offset
        )
    strings = elf.sections[symbol_table.link].data
    if len(symbol_table.data) % SYMBOL.size:
        raise DecodeError(
            f"{symbol_table.name} is {len(symbol_table.data)} bytes, not a multiple of 24", symbol_table.offset
        )
    symbols = []
    for start in range(0, len(symbol_table.data), SYMBOL.size):
        name_offset, info, other, shndx, value, size = SYMBOL.unpack_from(symbol_table.data, start)
        name = _string(strings, name_offset, symbol_table.offset + start, f"{symbol_table.name} entry {start // 24}")
        symbols.append(Symbol(name, value, size, shndx, info >> 4, info & 0xF, other))
    return tuple(symbols)


def read_notes(section: Section) -> tuple[Note, ...]:
    """The entries of a SHT_NOTE section (names and descriptors padded to 4 bytes)."""
    notes = []
    data, position = section.data, 0
    while position < len(data):
        where = section.offset + position
        if position + NOTE_HEADER.size > len(data):
            raise DecodeError(f"{section.name}: truncated note header ({len(data) - position} bytes left)", where)
        name_size, descriptor_size, note_type = NOTE_HEADER.unpack_from(data, position)
        name_start = position + NOTE_HEADER.size
        descriptor_start = name_start + _align(name_size, 4)
        end = descriptor_start + _align(descriptor_size, 4)
        if end > len(data):
            raise DecodeError(
                f"{section.name}: a note of {name_size}+{descriptor_size} bytes runs past the section end", where
            )
        owner = data[name_start : name_start + name_size].rstrip(b"\0").decode("utf-8", errors="replace")
        notes.append(Note(owner, note_type, data[descriptor_start : descriptor_start + descriptor_size]))
        position = end
    return tuple(notes)


# --- Writing -----------------------------------------------------------------------------


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment if alignment > 1 else value


def string_table(strings: list[str]) -> tuple[bytes, dict[str, int]]:
    """A NUL-separated string table starting with the empty string; offsets by string."""
    table = bytearray(b"\0")
    offsets = {"": 0}
    for string in strings:
        if string not in offsets:
            offsets[string] = len(table)
            table += string.encode("utf-8") + b"\0"
    return bytes(table), offsets


def symbol_table_bytes(symbols: list[Symbol], names: dict[str, int]) -> bytes:
    out = bytearray()
    for s in symbols:
        out += SYMBOL.pack(names[s.name], (s.binding << 4) | s.type, s.other, s.section_index, s.value, s.size)
    return bytes(out)


def note_bytes(notes: list[Note]) -> bytes:
    out = bytearray()
    for note in notes:
        owner = note.owner.encode("utf-8") + b"\0"
        out += NOTE_HEADER.pack(len(owner), len(note.descriptor), note.type)
        out += owner.ljust(_align(len(owner), 4), b"\0")
        out += note.descriptor.ljust(_align(len(note.descriptor), 4), b"\0")
    return bytes(out)


def write_elf(elf: ElfFile) -> bytes:
    """Serialize: header, section data in order (each aligned), then the section headers.

    `elf.sections[0]` must be the NULL section and `elf.section_names_index` must point
    at a SHT_STRTAB section whose data the caller built with `string_table` over the
    section names (see `with_section_names`).
    """
    names_section = elf.sections[elf.section_names_index]
    names = names_section.data
    out = bytearray(FILE_HEADER.size)
    offsets = []
    for section in elf.sections:
        if section.type in (SHT_NULL, SHT_NOBITS) or not section.data:
            offsets.append(len(out) if section.type != SHT_NULL else 0)
            continue
        out += bytes(_align(len(out), max(section.alignment, 1)) - len(out))
        offsets.append(len(out))
        out += section.data
    out += bytes(_align(len(out), 8) - len(out))
    section_headers = len(out)
    for section, offset in zip(elf.sections, offsets, strict=True):
        name_offset = _name_offset(names, section.name)
        size = len(section.data)
        out += SECTION_HEADER.pack(
            name_offset,
            section.type,
            section.flags,
            0,
            offset,
            size,
            section.link,
            section.info,
            section.alignment if section.type != SHT_NULL else 0,
            section.entry_size,
        )
    FILE_HEADER.pack_into(
        out,
        0,
        MAGIC,
        ELFCLASS64,
        ELFDATA2LSB,
        EV_CURRENT,
        elf.os_abi,
        elf.abi_version,
        bytes(7),
        elf.type,
        elf.machine,
        EV_CURRENT,
        0,
        0,
        section_headers,
        elf.flags,
        FILE_HEADER.size,
        0,
        0,
        SECTION_HEADER.size,
        len(elf.sections),
        elf.section_names_index,
    )
    return bytes(out)


def _name_offset(names: bytes, name: str) -> int:
    if not name:
        return 0
    key = b"\0" + name.encode("utf-8") + b"\0"
    position = names.find(key)
    if position < 0:
        raise ValueError(f"section name {name!r} is missing from the section-name table")
    return position + 1


def with_section_names(sections: list[Section], names_section: str = ".shstrtab") -> tuple[tuple[Section, ...], int]:
    """Append a section-name string table covering every section; return sections and its index."""
    table, _ = string_table([s.name for s in sections if s.name] + [names_section])
    sections = list(sections) + [Section(names_section, SHT_STRTAB, table)]
    return tuple(sections), len(sections) - 1
