"""The zebin container: the ELF file Intel's runtime (NEO) loads, written and read.

A zebin holds one `.text.<kernel>` section of native code per kernel, a `.ze_info`
section (YAML) telling the runtime how to dispatch each kernel (SIMD size, GRF count,
where each argument goes in the cross-thread payload, local ids, SLM, barriers, ...)
and an `.note.intelgt.compat` section naming the target (product family, GFX core,
.ze_info version).  `write_zebin` produces what `ocloc validate` accepts; `read_zebin`
reads IGC's zebins (from `ocloc compile`) and ours back into the same data model.

Field meanings: docs/dispatch.md and NEO's `zeinfo.h`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

import yaml

from .. import hw as hwlib
from ..errors import DecodeError, Error
from . import elf

EM_INTELGT = 205
ET_ZEBIN_EXE = 0xFF12  # NEO also accepts this type besides ET_REL
ZEBIN_ABI_VERSION = 1
SHT_ZEBIN_SPIRV = 0xFF000009
SHT_ZEBIN_ZEINFO = 0xFF000011
SHT_ZEBIN_GTPIN_INFO = 0xFF000012
SHT_ZEBIN_VISA_ASM = 0xFF000013
SHT_ZEBIN_MISC = 0xFF000014

TEXT_PREFIX = ".text."
REL_PREFIX, RELA_PREFIX = ".rel", ".rela"  # + ".text.<kernel>": the kernel's relocations
# Relocation types of zebin text (NEO's zebin_elf.h RelocTypeZebin)
R_ZE_SYM_ADDR, R_ZE_SYM_ADDR_32, R_ZE_SYM_ADDR_32_HI, R_PER_THREAD_PAYLOAD_OFFSET = 1, 2, 3, 4
ZEINFO_SECTION = ".ze_info"
NOTE_SECTION = ".note.intelgt.compat"
NOTE_OWNER = "IntelGT"
NOTE_PRODUCT_FAMILY = 1
NOTE_GFX_CORE = 2
NOTE_TARGET_METADATA = 3
NOTE_ZEBIN_VERSION = 4

# The newest .ze_info version the installed runtime (ocloc 22.43's NEO) decodes without a
# warning; every key this writer emits exists in it.
ZEINFO_VERSION = "1.15"

TEXT_ALIGNMENT = 64  # kernels start on a cache line in the file


class ZebinError(Error):
    """A zebin that is well-formed ELF but whose contents make no sense (names the section)."""


# --- Data model ------------------------------------------------------------------------------


def _raw() -> Any:
    return field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ExecutionEnv:
    """`execution_env` of a kernel: what the runtime needs to dispatch its threads."""

    grf_count: int
    simd_size: int  # 1, 8, 16 or 32
    required_sub_group_size: int | None = None
    required_work_group_size: tuple[int, int, int] | None = None
    work_group_walk_order_dimensions: tuple[int, int, int] | None = None
    barrier_count: int = 0
    slm_size: int = 0  # bytes of statically allocated SLM (__local arrays)
    inline_data_payload_size: int = 0  # bytes of cross-thread data delivered in the walker (XeHP+)
    offset_to_skip_per_thread_data_load: int = 0
    offset_to_skip_set_ffid_gp: int = 0
    indirect_stateless_count: int = 0
    eu_thread_count: int = 0
    has_dpas: bool = False
    has_fence_for_image_access: bool = False
    has_global_atomics: bool = False
    has_multi_scratch_spaces: bool = False
    has_no_stateless_write: bool = False
    has_stack_calls: bool = False
    has_4gb_buffers: bool = False
    disable_mid_thread_preemption: bool = False
    require_disable_eufusion: bool = False
    subgroup_independent_forward_progress: bool = False
    raw: Mapping[str, Any] = _raw()  # keys this model does not know, as read (strings)


@dataclass(frozen=True)
class PayloadArgument:
    """One entry of `payload_arguments`: where something lands in the cross-thread data."""

    arg_type: str  # arg_bypointer, arg_byvalue, local_size, group_count, global_id_offset, ...
    offset: int = 0
    size: int = 0
    arg_index: int | None = None  # the kernel argument it belongs to
    addrmode: str | None = None  # arg_bypointer: stateless, stateful, bindless, slm
    addrspace: str | None = None  # arg_bypointer: global, local, constant, image, sampler
    access_type: str | None = None  # arg_bypointer: readonly, writeonly, readwrite
    slm_alignment: int | None = None  # __local pointers
    source_offset: int | None = None  # arg_byvalue pieces of a larger argument
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class PerThreadPayloadArgument:
    """One entry of `per_thread_payload_arguments` (local ids), per thread."""

    arg_type: str  # local_id or packed_local_ids
    offset: int
    size: int
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class BindingTableIndex:
    bti_value: int
    arg_index: int
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class PerThreadMemoryBuffer:
    """Private or spill memory a kernel needs per thread (`per_thread_memory_buffers`)."""

    type: str  # global, scratch or slm
    usage: str  # private_space, spill_fill_space or single_space
    size: int
    is_simt_thread: bool | None = None
    slot: int | None = None
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class Relocation:
    """A place in a kernel's code the runtime patches at load time: `offset` bytes into the
    code, an R_ZE_* `type` (8 bytes for R_ZE_SYM_ADDR, else 4), the symbol whose value goes
    there ("" for none) and the addend of a .rela entry."""

    offset: int
    type: int
    symbol: str = ""
    addend: int = 0


@dataclass(frozen=True)
class ZebinKernel:
    name: str
    code: bytes
    execution_env: ExecutionEnv
    payload_arguments: tuple[PayloadArgument, ...] = ()
    per_thread_payload_arguments: tuple[PerThreadPayloadArgument, ...] = ()
    binding_table_indices: tuple[BindingTableIndex, ...] = ()
    per_thread_memory_buffers: tuple[PerThreadMemoryBuffer, ...] = ()
    raw: Mapping[str, Any] = _raw()  # other kernel keys (debug_env, user_attributes, ...)
    relocations: tuple[Relocation, ...] = ()  # from .rel(a).text.<name>


@dataclass(frozen=True)
class Zebin:
    kernels: tuple[ZebinKernel, ...]
    product_family: int | None = None  # from the note; IGFX_DG2 = 1270, ...
    gfx_core: int | None = None  # 0 when IGC leaves it unset
    target_metadata: int | None = None  # NEO's ZebinTargetFlags, packed
    zebin_version: str | None = None  # the note's version string
    zeinfo_version: str = ZEINFO_VERSION  # .ze_info `version`
    section_names: tuple[str, ...] = ()  # every section, in file order
    raw: Mapping[str, Any] = _raw()  # other top-level .ze_info keys (kernels_misc_info, ...)

    @property
    def platform(self) -> hwlib.Platform | None:
        """The platform the compatibility note names, if it is one of ours.  As NEO's
        `validateTargetDevice` does, a product family and a (nonzero) gfx core each must match
        when present: nGEN's zebins name only the gfx core, IGC's the product family."""
        core = self.gfx_core or None
        if self.product_family is None and core is None:
            return None
        for candidate in hwlib.PLATFORMS:
            if self.product_family not in (None, candidate.product_family):
                continue
            if core not in (None, candidate.gfx_core):
                continue
            return candidate
        return None

    def kernel(self, name: str) -> ZebinKernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r}; the zebin has {[k.name for k in self.kernels]}")


# --- Writing -----------------------------------------------------------------------------------


def write_zebin(
    kernels: Sequence[ZebinKernel],
    hw: str | hwlib.Platform,
    *,
    zeinfo_version: str = ZEINFO_VERSION,
    extra_zeinfo: Mapping[str, Any] | None = None,
) -> bytes:
    """A zebin for `hw` holding `kernels`; the same input always gives the same bytes."""
    platform = hwlib.platform(hw)
    names = [k.name for k in kernels]
    if not kernels:
        raise Error("a zebin needs at least one kernel")
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise Error(f"kernel name {name!r} is not a C identifier")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise Error(f"kernel names must be unique; repeated: {', '.join(duplicates)}")

    sections: list[elf.Section] = [elf.Section("", elf.SHT_NULL)]
    for k in kernels:
        sections.append(
            elf.Section(
                TEXT_PREFIX + k.name,
                elf.SHT_PROGBITS,
                bytes(k.code),
                elf.SHF_ALLOC | elf.SHF_EXECINSTR,
                alignment=TEXT_ALIGNMENT,
            )
        )
    zeinfo = emit_yaml(zeinfo_document(kernels, zeinfo_version, extra_zeinfo)).encode("utf-8")
    sections.append(elf.Section(ZEINFO_SECTION, SHT_ZEBIN_ZEINFO, zeinfo, alignment=1))
    notes = compat_notes(platform, zeinfo_version)
    sections.append(elf.Section(NOTE_SECTION, elf.SHT_NOTE, elf.note_bytes(notes), alignment=4))

    externals = sorted({r.symbol for k in kernels for r in k.relocations if r.symbol} - set(names))
    strtab, offsets = elf.string_table(names + externals)
    symbols = [elf.Symbol("")] + [
        elf.Symbol(k.name, 0, len(k.code), index + 1, elf.STB_LOCAL, elf.STT_FUNC) for index, k in enumerate(kernels)
    ]
    symbols += [elf.Symbol(name, binding=elf.STB_GLOBAL) for name in externals]  # undefined: the runtime's
    symbol_index = {symbol.name: index for index, symbol in enumerate(symbols) if symbol.name}
    symtab_index = len(sections) + sum(1 for k in kernels if k.relocations)
    for index, k in enumerate(kernels):
        if k.relocations:
            entries = b"".join(
                elf.RELA.pack(r.offset, symbol_index.get(r.symbol, 0) << 32 | r.type, r.addend) for r in k.relocations
            )
            sections.append(
                elf.Section(
                    RELA_PREFIX + TEXT_PREFIX + k.name,
                    elf.SHT_RELA,
                    entries,
                    link=symtab_index,
                    info=index + 1,
                    alignment=8,
                    entry_size=elf.RELA.size,
                )
            )
    sections.append(
        elf.Section(
            ".symtab",
            elf.SHT_SYMTAB,
            elf.symbol_table_bytes(symbols, offsets),
            link=symtab_index + 1,
            info=len(symbols),
            alignment=8,
            entry_size=elf.SYMBOL.size,
        )
    )
    sections.append(elf.Section(".strtab", elf.SHT_STRTAB, strtab))
    all_sections, names_index = elf.with_section_names(sections)
    return elf.write_elf(
        elf.ElfFile(all_sections, EM_INTELGT, elf.ET_REL, ZEBIN_ABI_VERSION, section_names_index=names_index)
    )


def compat_notes(platform: hwlib.Platform, zeinfo_version: str = ZEINFO_VERSION) -> list[elf.Note]:
    """The .note.intelgt.compat entries NEO checks against the device (this ocloc's validator does not)."""
    return [
        elf.Note(NOTE_OWNER, NOTE_PRODUCT_FAMILY, struct.pack("<I", platform.product_family)),
        elf.Note(NOTE_OWNER, NOTE_GFX_CORE, struct.pack("<I", platform.gfx_core)),
        elf.Note(NOTE_OWNER, NOTE_ZEBIN_VERSION, zeinfo_version.encode() + b"\0"),
    ]


def zeinfo_document(
    kernels: Sequence[ZebinKernel], version: str = ZEINFO_VERSION, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The .ze_info content as ordered Python data (mappings, lists, scalars)."""
    document: dict[str, Any] = {"version": Quoted(version), "kernels": [_kernel_document(k) for k in kernels]}
    for key, value in (extra or {}).items():
        if key in document:
            raise Error(f".ze_info key {key!r} is written by the zebin writer itself")
        document[key] = value
    return document


def _kernel_document(kernel: ZebinKernel) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": kernel.name,
        "execution_env": _entry(kernel.execution_env, required=("grf_count", "simd_size")),
    }
    lists = (
        ("payload_arguments", kernel.payload_arguments, ("arg_type", "offset", "size")),
        ("per_thread_payload_arguments", kernel.per_thread_payload_arguments, ("arg_type", "offset", "size")),
        ("binding_table_indices", kernel.binding_table_indices, ("bti_value", "arg_index")),
        ("per_thread_memory_buffers", kernel.per_thread_memory_buffers, ("type", "usage", "size")),
    )
    for key, items, required in lists:
        if items:
            out[key] = [_entry(item, required) for item in items]
    for key, value in kernel.raw.items():
        out.setdefault(key, value)
    return out


def _entry(record: Any, required: tuple[str, ...]) -> dict[str, Any]:
    """A record's fields as a mapping: required ones always, others when not at their default."""
    out: dict[str, Any] = {}
    for f in fields(record):
        if f.name == "raw":
            continue
        value = getattr(record, f.name)
        default = f.default
        if f.name in required or (value is not None and value != default):
            out[f.name] = list(value) if isinstance(value, tuple) else value
    for key, value in record.raw.items():
        out.setdefault(key, value)
    return out


class Quoted(str):
    """A string the YAML emitter always quotes (the .ze_info version must stay a string)."""


_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.;*/ -]*")
_SPECIAL_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        plain = (
            not isinstance(value, Quoted)
            and _PLAIN.fullmatch(value)
            and not value.endswith(" ")
            and value.lower() not in _SPECIAL_WORDS
            and ": " not in value
            and " #" not in value
        )
        return value if plain else "'" + value.replace("'", "''") + "'"
    raise Error(f"cannot write {type(value).__name__} {value!r} into .ze_info")


def emit_yaml(document: Mapping[str, Any]) -> str:
    """Block-style YAML of nested mappings, lists and scalars, in the order given."""
    lines: list[str] = ["---"]
    _emit_mapping(document, 0, lines)
    lines.append("...")
    return "\n".join(lines) + "\n"


def _emit_mapping(mapping: Mapping[str, Any], indent: int, lines: list[str], first_prefix: str | None = None) -> None:
    for position, (key, value) in enumerate(mapping.items()):
        prefix = first_prefix if position == 0 and first_prefix is not None else " " * indent
        head = f"{prefix}{_scalar(key)}:"
        if isinstance(value, Mapping):
            lines.append(head)
            _emit_mapping(value, indent + 2, lines)
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            lines.append(head)
            for item in value:
                _emit_mapping(item, indent + 4, lines, first_prefix=" " * (indent + 2) + "- ")
        elif isinstance(value, list):
            if not value:  # NEO's YAML reader rejects an empty flow list
                raise Error(f".ze_info key {key!r}: an empty list cannot be written; leave the key out")
            lines.append(f"{head} [ {', '.join(_scalar(v) for v in value)} ]")
        else:
            lines.append(f"{head} {_scalar(value)}")


# --- Reading ----------------------------------------------------------------------------------


def read_zebin(data: bytes) -> Zebin:
    """Parse a zebin (IGC's or ours).  Bad input raises DecodeError (with the byte offset)."""
    data = bytes(data)
    parsed = elf.read_elf(data)
    if parsed.machine != EM_INTELGT:
        raise DecodeError(f"ELF machine is {parsed.machine}, not EM_INTELGT (205): not a zebin", 18)
    if parsed.type not in (elf.ET_REL, ET_ZEBIN_EXE):
        raise DecodeError(f"ELF type 0x{parsed.type:x} is neither ET_REL nor ET_ZEBIN_EXE (0xff12)", 16)

    zeinfo_sections = [s for s in parsed.sections if s.type == SHT_ZEBIN_ZEINFO]
    if not zeinfo_sections:
        raise DecodeError(
            f"no {ZEINFO_SECTION} section (type 0xff000011) among the {len(parsed.sections)} sections",
            _section_headers_offset(data),
        )
    if len(zeinfo_sections) > 1:
        raise DecodeError(
            f"{len(zeinfo_sections)} {ZEINFO_SECTION} sections; a zebin has one", zeinfo_sections[1].offset
        )
    zeinfo = zeinfo_sections[0]
    texts = {
        s.name[len(TEXT_PREFIX) :]: s
        for s in parsed.sections
        if s.type == elf.SHT_PROGBITS and s.name.startswith(TEXT_PREFIX)
    }
    document = _YamlDocument(zeinfo)
    top = document.mapping(document.root, ZEINFO_SECTION)

    kernels = []
    kernel_nodes = document.sequence(top["kernels"], "kernels") if "kernels" in top else []
    for number, node in enumerate(kernel_nodes):
        kernel = _read_kernel(document, node, f"kernels[{number}]", texts)
        relocations = _read_relocations(parsed, kernel.name)
        kernels.append(replace(kernel, relocations=relocations) if relocations else kernel)
    version = document.string(top["version"], "version") if "version" in top else ""
    raw = {key: document.plain(value) for key, value in top.items() if key not in ("kernels", "version")}

    notes = _read_compat_notes(parsed)
    return Zebin(
        kernels=tuple(kernels),
        product_family=notes.get(NOTE_PRODUCT_FAMILY),
        gfx_core=notes.get(NOTE_GFX_CORE),
        target_metadata=notes.get(NOTE_TARGET_METADATA),
        zebin_version=notes.get(NOTE_ZEBIN_VERSION),
        zeinfo_version=version,
        section_names=tuple(s.name for s in parsed.sections),
        raw=raw,
    )


def _read_relocations(parsed: elf.ElfFile, kernel: str) -> tuple[Relocation, ...]:
    """The entries of `.rel.text.<kernel>` and `.rela.text.<kernel>`, symbols by name."""
    found = []
    for prefix, section_type, entry in ((REL_PREFIX, elf.SHT_REL, elf.REL), (RELA_PREFIX, elf.SHT_RELA, elf.RELA)):
        section = parsed.section(prefix + TEXT_PREFIX + kernel)
        if section is None:
            continue
        if section.type != section_type or len(section.data) % entry.size:
            raise DecodeError(f"{section.name} is not a table of {entry.size}-byte relocations", section.offset)
        if not 0 < section.link < len(parsed.sections) or parsed.sections[section.link].type != elf.SHT_SYMTAB:
            raise DecodeError(f"{section.name} does not link to a symbol table", section.offset)
        symbols = elf.read_symbols(parsed, parsed.sections[section.link])
        for start in range(0, len(section.data), entry.size):
            fields_ = entry.unpack_from(section.data, start)
            offset, info = fields_[0], fields_[1]
            addend = fields_[2] if len(fields_) > 2 else 0
            if info >> 32 >= len(symbols):
                raise DecodeError(
                    f"{section.name} entry {start // entry.size} names symbol {info >> 32}, which does not exist",
                    section.offset + start,
                )
            found.append(Relocation(offset, info & 0xFFFFFFFF, symbols[info >> 32].name, addend))
    return tuple(found)


def _section_headers_offset(data: bytes) -> int:
    return struct.unpack_from("<Q", data, 0x28)[0]


def _read_compat_notes(parsed: elf.ElfFile) -> dict[int, Any]:
    section = parsed.section(NOTE_SECTION)
    if section is None or section.type != elf.SHT_NOTE:
        return {}
    found: dict[int, Any] = {}
    for note in elf.read_notes(section):
        if note.owner != NOTE_OWNER:
            continue
        if note.type in (NOTE_PRODUCT_FAMILY, NOTE_GFX_CORE, NOTE_TARGET_METADATA):
            if len(note.descriptor) != 4:
                raise DecodeError(
                    f"{NOTE_SECTION}: note type {note.type} has {len(note.descriptor)} bytes, expected 4",
                    section.offset,
                )
            found[note.type] = struct.unpack("<I", note.descriptor)[0]
        elif note.type == NOTE_ZEBIN_VERSION:
            found[note.type] = note.descriptor.split(b"\0", 1)[0].decode("utf-8", errors="replace")
    return found


def _read_kernel(doc: _YamlDocument, node: Any, path: str, texts: dict[str, elf.Section]) -> ZebinKernel:
    entries = doc.mapping(node, path)
    name = doc.string(doc.require(entries, "name", node, path), f"{path}.name")
    path = f"kernel {name!r}"
    if name not in texts:
        raise DecodeError(
            f"{ZEINFO_SECTION} describes {path} but there is no {TEXT_PREFIX}{name} section",
            doc.offset_of(entries["name"]),
        )
    env = doc.record(ExecutionEnv, doc.require(entries, "execution_env", node, path), f"{path}.execution_env")
    lists = {
        "payload_arguments": PayloadArgument,
        "per_thread_payload_arguments": PerThreadPayloadArgument,
        "binding_table_indices": BindingTableIndex,
        "per_thread_memory_buffers": PerThreadMemoryBuffer,
    }
    values: dict[str, tuple] = {}
    for key, record_type in lists.items():
        items = doc.sequence(entries[key], f"{path}.{key}") if key in entries else []
        values[key] = tuple(doc.record(record_type, item, f"{path}.{key}[{i}]") for i, item in enumerate(items))
    raw = {key: doc.plain(value) for key, value in entries.items() if key not in ("name", "execution_env", *lists)}
    return ZebinKernel(name, texts[name].data, env, raw=raw, **values)


class _YamlDocument:
    """The .ze_info YAML as nodes (every scalar a string, as NEO reads it), with offsets for errors."""

    MAX_NODES = 1_000_000  # aliases could otherwise make a tiny file expand without bound

    def __init__(self, section: elf.Section):
        self.section = section
        try:
            self.text = section.data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DecodeError(f"{ZEINFO_SECTION} is not UTF-8 ({error.reason})", section.offset + error.start) from None
        try:
            root = yaml.compose(self.text, Loader=yaml.BaseLoader)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
            where = self._byte_offset(mark.index) if mark is not None else section.offset
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            raise DecodeError(f"{ZEINFO_SECTION} is not valid YAML: {problem}", where) from None
        except RecursionError:
            raise DecodeError(f"{ZEINFO_SECTION} nests too deeply", section.offset) from None
        if root is None:
            raise DecodeError(f"{ZEINFO_SECTION} is empty", section.offset)
        self.root = root
        self.budget = self.MAX_NODES

    def _byte_offset(self, character_index: int) -> int:
        return self.section.offset + len(self.text[:character_index].encode("utf-8"))

    def offset_of(self, node: Any) -> int:
        return self._byte_offset(node.start_mark.index)

    def fail(self, node: Any, message: str) -> DecodeError:
        return DecodeError(f"{ZEINFO_SECTION}: {message}", self.offset_of(node))

    def mapping(self, node: Any, path: str) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{path} should be a mapping")
        out: dict[str, Any] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.fail(key, f"{path} has a key that is not a plain string")
            out[key.value] = value
        return out

    def sequence(self, node: Any, path: str) -> list[Any]:
        if isinstance(node, yaml.ScalarNode) and node.value == "":
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{path} should be a list")
        return list(node.value)

    def require(self, entries: dict[str, Any], key: str, node: Any, path: str) -> Any:
        if key not in entries:
            raise self.fail(node, f"{path} has no {key}")
        return entries[key]

    def string(self, node: Any, path: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"{path} should be a string")
        return node.value

    def integer(self, node: Any, path: str) -> int:
        text = self.string(node, path).strip()
        try:
            return int(text, 0)
        except ValueError:
            try:
                return int(text, 10)
            except ValueError:
                raise self.fail(node, f"{path} should be an integer, not {text!r}") from None

    def boolean(self, node: Any, path: str) -> bool:
        text = self.string(node, path).strip().lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise self.fail(node, f"{path} should be true or false, not {text!r}")

    def triple(self, node: Any, path: str) -> tuple[int, int, int]:
        items = self.sequence(node, path)
        if len(items) != 3:
            raise self.fail(node, f"{path} should list 3 integers, not {len(items)}")
        return tuple(self.integer(item, f"{path}[{i}]") for i, item in enumerate(items))  # type: ignore[return-value]

    def record(self, record_type: type, node: Any, path: str) -> Any:
        """A dataclass from a mapping: typed fields converted, unknown keys kept in `raw`."""
        entries = self.mapping(node, path)
        values: dict[str, Any] = {}
        raw: dict[str, Any] = {}
        known = {f.name: f for f in fields(record_type) if f.name != "raw"}
        for key, value in entries.items():
            f = known.get(key)
            if f is None:
                raw[key] = self.plain(value)
                continue
            kind = str(f.type)
            where = f"{path}.{key}"
            if "tuple[int, int, int]" in kind:
                values[key] = self.triple(value, where)
            elif "bool" in kind:
                values[key] = self.boolean(value, where)
            elif "int" in kind:
                values[key] = self.integer(value, where)
            else:
                values[key] = self.string(value, where)
        missing = [name for name in known if name not in values and _is_required(known[name])]
        if missing:
            raise self.fail(node, f"{path} has no {', '.join(missing)}")
        return record_type(**values, raw=raw)

    def plain(self, node: Any) -> Any:
        """A node as plain Python: dicts, lists and strings."""
        self.budget -= 1
        if self.budget < 0:
            raise self.fail(node, "too many YAML nodes (aliases expanding?)")
        if isinstance(node, yaml.MappingNode):
            return {self.string(k, "key"): self.plain(v) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(v) for v in node.value]
        return node.value


def _is_required(f: Any) -> bool:
    return f.default is MISSING and f.default_factory is MISSING
