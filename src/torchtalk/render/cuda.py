"""Markdown for cuda_kernels: the GPU kernels and library calls a function or op reaches, nearest first."""

from __future__ import annotations

from typing import TypeVar

from ..model import Edge, EdgeKind, Loc
from ..query.cuda import CudaKernelsResult, GpuKernel, KernelLaunch, LibraryCall, Nearness, near
from ..query.cuts import tool_call
from .budget import STRUCTURED, Section, fitted
from .common import IN_STRUCTURED, cut_lines, showing


def render_cuda(r: CudaKernelsResult) -> str:
    if r.query is None:
        s = r.summary
        out = [f"# GPU kernels: {s['global_kernels']:,} __global__ kernels in {s['files']:,} files; "
               f"{s['launch_sites']:,} <<<>>> launch sites, {s['helper_launch_sites']:,} launch-helper sites",
               "\nFiles with the most kernels:"]
        out += [f"- {path}: {n}" for path, n in s["top_files"]]  # type: ignore[attr-defined]
        out.append(f"\nA sample across the tree ({len(r.kernels)}):")
        out += [f"- __global__ {k.name}  {k.definitions[0].loc}" for k in r.kernels if k.definitions]
        out.append("\nGive an op or function name (cuda_kernels('index_select')) to see its kernels and launch sites.")
        return "\n".join(out)
    out = [f"# GPU kernels for {r.query} ({r.matched}): {len(r.kernels)} __global__ kernels, "
           f"{len(r.helpers)} launch-family calls, {len(r.libraries)} library calls"]
    if r.no_device_work:
        out.append(f"No device work: {r.no_device_work}.")
    # Every kernel, and the launch families and library calls of each op at each distance, is a section; sections
    # in order of nearness, one scale for all kinds (Note [Nearest first] in graph/gpu_rank.py): the budget cuts
    # the farthest.
    shows = f"{STRUCTURED} of {tool_call('cuda_kernels', r.query)}"
    shared = _shared_sites(r.kernels)
    grouped = {id(k) for kernels in shared.values() for k in kernels}
    ranked: list[tuple[Nearness, Section, KernelLaunch | LibraryCall, str]] = [
        (near(k.launches[0]), _kernel_section(k), k.launches[0], f"__global__ {k.name}  {_where(k)}")
        for k in r.kernels if k.launches and id(k) not in grouped]
    for site, kernels in shared.items():
        one = kernels[0].launches[0]
        ranked.append((near(one), _shared_section(site, kernels, shows), one,
                       f"{len(kernels)} __global__ kernels launched at {site} ({kernels[0].name}, ...)"))
    for helpers in _groups(r.helpers):
        h = helpers[0]
        ranked.append((near(h), _family_section(helpers, shows), h, f"{_code(h)} at {h.site.site}"))
    for libraries in _groups(r.libraries):
        lib = libraries[0]
        ranked.append((near(lib), _library_section(libraries, shows), lib,
                       f"{lib.library}: {lib.site.written or lib.site.dst.label} at {lib.site.site}"))
    ranked.sort(key=lambda sec: sec[0])
    if ranked:
        n, _sec, first, what = ranked[0]
        out.append(f"Nearest first: {what} ({n.describe(first.via)}); the rest by distance: the dense path first, "
                   "then forward before backward, device work before allocations and other ops' copies, fewer ops "
                   "crossed, its own code before other ops', fewer calls.")
    sections = [sec for _, sec, _x, _w in ranked] + [_kernel_section(k) for k in r.kernels if not k.launches]
    return fitted(out, sections, [f"\nNote: {n}" for n in r.notes] + cut_lines(r.cuts))


HELPERS_SHOWN = 12  # launch-family or library calls of the op's own code shown in the text
OTHERS_SHOWN = 4  # of another op's code (cuda_kernels of that op lists them)
X = TypeVar("X", KernelLaunch, LibraryCall)


def _shown(group: list[X]) -> int:
    return OTHERS_SHOWN if group[0].via else HELPERS_SHOWN


def _more(group: list[X]) -> list[str]:
    """The line that says how many of a group the text shows, and where the rest are."""
    n = _shown(group)
    if len(group) <= n:
        return []
    also = f"; {tool_call('cuda_kernels', group[0].via)} lists {group[0].via}'s own" if group[0].via else ""
    return [f"- ... {showing(n, len(group), IN_STRUCTURED)}{also}"]


def _groups(found: list[X]) -> list[list[X]]:
    """Launch-family or library calls (in order of nearness) grouped by whose code they are and how near."""
    groups: dict[tuple[Nearness, str], list[X]] = {}
    for x in found:
        groups.setdefault((near(x)._replace(calls=0), x.via), []).append(x)
    return list(groups.values())


def _where(k: GpuKernel) -> str:
    return ", ".join(str(d.loc) for d in k.definitions[:2]) or "definition not found"


def _code(h: KernelLaunch) -> str:
    """A family call's device code: 'gpu_kernel(lambda@24)', 'gpu_kernel(FillFunctor FillKernel.cu:13)'."""
    code = h.site.dst.label
    if h.functor and not code.endswith(f"@{h.functor.line})"):  # a functor class: where it is defined
        code = f"{code[:-1]} {h.functor})"
    return code


def _tag(kernels: list[GpuKernel]) -> str:
    """What a kernel section's launches all are: the backward, a sparse/nested/quantized path (the heading of a
    launch-family or library section says it by its nearness)."""
    tags = ["backward"] if all(k.backward for k in kernels) else []
    tags += ["sparse/nested/quantized path"] if all(k.layout for k in kernels) else []
    return f"  [{', '.join(tags)}]" if tags else ""


def _kernel_section(k: GpuKernel) -> Section:
    where = _where(k)
    tag = _tag([k])
    lines = [f"- launched at {launch.site.site} by {launch.site.src.label}{_via(launch)}" for launch in k.launches[:10]]
    if len(k.launches) > 10:
        lines.append(f"- ... {showing(10, len(k.launches), IN_STRUCTURED)} launch sites")
    return Section([f"\n## __global__ {k.name}  {where}{tag}"], lines, f"__global__ {k.name}",
                   tool_call("cuda_kernels", k.name), "launch lines")


SHARED_SITE = 3  # kernels with one launch site, the same one, shown as one section (a kernel handed to a parameter)


def _shared_sites(kernels: list[GpuKernel]) -> dict[Loc, list[GpuKernel]]:
    """Launch sites each of at least SHARED_SITE kernels has as its only one: memory-efficient attention's
    ``kernel_fn<<<>>>`` runs each of the ~45 kernels ``dispatch_cutlassF`` hands it (Note [Kernels handed to a
    launching lambda]); one section lists them, instead of one section of one line per kernel."""
    by_site: dict[Loc, list[GpuKernel]] = {}
    for k in kernels:
        site = k.launches[0].site.site if len(k.launches) == 1 else None
        if site is not None:
            by_site.setdefault(site, []).append(k)
    return {site: ks for site, ks in by_site.items() if len(ks) >= SHARED_SITE}


def _shared_section(site: Loc, kernels: list[GpuKernel], shows: str) -> Section:
    first = kernels[0].launches[0]
    tag = _tag(kernels)
    return Section([f"\n## {len(kernels)} __global__ kernels launched at {site} by {first.site.src.label}{_via(first)}"
                    f"{tag}"], [f"- __global__ {k.name}  {_where(k)}" for k in kernels],
                   f"kernels launched at {site}", shows, "kernels")


def _family_section(helpers: list[KernelLaunch], shows: str) -> Section:
    lines = []
    for h in helpers[:_shown(helpers)]:
        # one per definition: a template launched at several sites of the family is one kernel
        shown = list(dict.fromkeys(f"{t.name} {t.defined or t.launched}" for t in h.templates))
        made = ", ".join(shown[:3]) or "template not found"
        more = f" +{len(shown) - 3}" if len(shown) > 3 else ""
        lines.append(f"- {_code(h)} at {h.site.site} in {h.site.src.label} -> {made}{more}{_via(h)}")
    lines += _more(helpers)
    whose = near(helpers[0]).describe(helpers[0].via)
    return Section([f"\n## Launch families, {whose} (device code -> the __global__ template the family launches)"],
                   lines, f"launch families ({whose})", shows, "calls")


def _library_section(libraries: list[LibraryCall], shows: str) -> Section:
    lines = []
    for lib in libraries[:_shown(libraries)]:
        name = lib.site.written or lib.site.dst.label
        chain = f" ({lib.site.note})" if lib.site.note else ""
        lines.append(f"- {lib.library}: {name} at {lib.site.site}{chain} in {lib.site.src.label}{_via(lib)}")
    lines += _more(libraries)
    whose = near(libraries[0]).describe(libraries[0].via)
    return Section([f"\n## Libraries, {whose}"], lines, f"library calls ({whose})", shows, "calls")


def _via(launch: KernelLaunch | LibraryCall) -> str:
    """How a launch is reached: the chain from the op for its own code; the other op's name for another op's."""
    formula = next((e.site for e in launch.chain if e.kind is EdgeKind.BACKWARD and e.site), None)
    tag = f" [backward {formula}]" if formula else " [backward]" if launch.backward else ""
    if launch.via:
        return f"  ({launch.via}'s code){tag}"
    chain = _chain(launch.chain)
    return f"  via {chain}{tag}" if chain else tag


def _chain(chain: list[Edge]) -> str:
    """'softmax.int [CompositeImplicitAutograd] -> at::native::softmax -> _softmax [op] -> ...'."""
    if not chain:
        return ""
    parts = [chain[0].src.label]
    for e in chain:
        if e.kind is EdgeKind.KERNEL:
            parts[-1] += f" [{e.key}]"
            parts.append(e.dst.label)
        elif e.kind is EdgeKind.STUB_KERNEL:
            parts.append(f"{e.src.key} [{e.key}]")
            parts.append(e.dst.label)
        elif e.kind is EdgeKind.BACKWARD:
            parts.append(f"backward {e.dst.label}")
        elif e.kind is EdgeKind.STUB_CALL:
            continue
        else:
            parts.append(e.dst.label)
    return " -> ".join(parts)
